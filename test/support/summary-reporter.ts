import type { Reporter, TestModule } from 'vitest/node';

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
    for (const module of testModules) {
      const ms = module.diagnostic().duration;
      const project = module.project.name || 'default';
      byProject.set(project, (byProject.get(project) ?? 0) + ms);
      files.push({ file: module.relativeModuleId, ms });
      if (module.state() === 'failed' && module.errors().length > 0) failed += 1;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failed += 1;
        else skipped += 1;
      }
    }
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const slowest = files.sort((a, b) => b.ms - a.ms).slice(0, 10);
    if (slowest.length > 1) {
      process.stdout.write('\nslowest files (time in their tests and hooks):\n');
      for (const { file, ms } of slowest)
        process.stdout.write(`  ${seconds(ms).padStart(8)}  ${file}\n`);
      const projects = [...byProject].map(([name, ms]) => `${name} ${seconds(ms)}`).join(', ');
      process.stdout.write(
        `time in tests and hooks per project (summed over files): ${projects}\n`,
      );
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
