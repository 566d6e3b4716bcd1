import { execFileSync } from 'node:child_process';
import { mkdirSync, statfsSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import type { Reporter, TestModule } from 'vitest/node';

/** The first line of a failure's message, its numbers masked: alike failures group together. */
function headline(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/\d+/g, 'N').slice(0, 160);
}

/**
 * What the machine looked like as the run ended: when many tests fail at once, the cause is
 * often here (a loaded machine, a full disk, a broker alarm blocking every publisher), and
 * this is the part of a CI log that is always shown.
 */
function machineLine(): string {
  const { bavail, bsize } = statfsSync(tmpdir());
  let broker: string;
  try {
    broker = execFileSync('rabbitmq-diagnostics', ['-q', 'alarms'], {
      encoding: 'utf8',
      timeout: 15_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .trim()
      .replace(/\s+/g, ' ');
  } catch (error) {
    broker = `rabbitmq-diagnostics failed: ${headline((error as Error).message)}`;
  }
  const load = loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
  const freeMb = Math.round((bavail * bsize) / 2 ** 20);
  return `machine at the end: load ${load}; ${freeMb} MB free under ${tmpdir()}; ${broker}`;
}

/**
 * Ends the run with the slowest files and the time each project's files took (so the suite's
 * time is seen every run, docs/testing.md), then one line CI can read: `N passed, N failed,
 * N skipped`. A module that failed to load and an unhandled error each count as a failure,
 * so a broken file can never look like a green run.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
  ): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    const byProject = new Map<string, number>();
    const files: Array<{ file: string; ms: number }> = [];
    const causes = new Map<string, number>();
    const cause = (message: string) =>
      causes.set(headline(message), (causes.get(headline(message)) ?? 0) + 1);
    for (const module of testModules) {
      const ms = module.diagnostic().duration;
      const project = module.project.name || 'default';
      byProject.set(project, (byProject.get(project) ?? 0) + ms);
      files.push({ file: module.relativeModuleId, ms });
      if (module.state() === 'failed' && module.errors().length > 0) {
        failed += 1;
        for (const error of module.errors()) cause(error.message);
      }
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed += 1;
        else if (result.state === 'failed') {
          failed += 1;
          for (const error of result.errors ?? []) cause(error.message);
        } else skipped += 1;
      }
    }
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    files.sort((a, b) => b.ms - a.ms);
    // Every file's time, for finding what to shorten or split (the ten slowest are printed below).
    mkdirSync('test-output', { recursive: true });
    writeFileSync(
      `test-output/file-times-${process.env.TEST_SET ?? 'all'}.tsv`,
      files.map(({ file, ms }) => `${ms}\t${file}\n`).join(''),
    );
    const slowest = files.slice(0, 10);
    if (slowest.length > 1) {
      process.stdout.write('\nslowest files (time in their tests and hooks):\n');
      for (const { file, ms } of slowest)
        process.stdout.write(`  ${seconds(ms).padStart(8)}  ${file}\n`);
      const projects = [...byProject].map(([name, ms]) => `${name} ${seconds(ms)}`).join(', ');
      process.stdout.write(
        `time in tests and hooks per project (summed over files): ${projects}\n`,
      );
    }
    if (causes.size > 0) {
      process.stdout.write('\nfailures by first line (most first):\n');
      for (const [line, count] of [...causes].sort((a, b) => b[1] - a[1]).slice(0, 8))
        process.stdout.write(`  ${String(count).padStart(5)} × ${line}\n`);
    }
    process.stdout.write(`${machineLine()}\n`);
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
