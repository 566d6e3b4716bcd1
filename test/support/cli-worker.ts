import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { AMQP_URL, declareTestTopology, type TestTopology } from './broker.js';
import { tempFolder } from './temp.js';

import { cliEntry, ROOT } from './cli-entry.js';

/** A `warehouse-ingest run <pipeline>` worker process, as an operator would run it (the run's compiled CLI). */
export interface CliWorker {
  readonly child: ChildProcess;
  /** Its log lines (pino JSON on stdout), parsed, in order. */
  readonly lines: Array<Record<string, unknown>>;
  /** How many log lines have `msg` equal to `message`. */
  count(message: string): number;
  /** Resolves with the exit code or signal once the process is gone. */
  readonly exited: Promise<string>;
  /** Whatever it wrote to stderr (kept for failure messages). */
  stderr(): string;
}

export function startCliWorker(pipelineFile: string, env: NodeJS.ProcessEnv): CliWorker {
  return startCli(['run', pipelineFile], env);
}

/** `warehouse-ingest <args>` as a process (e.g. `serve`), watched the same way. */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv): CliWorker {
  const child = spawn(process.execPath, [cliEntry(), ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let pending = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const complete = pending.split('\n');
    pending = complete.pop()!;
    for (const line of complete) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line }); // not ours to judge here; kept for the failure message
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 64 * 1024) stderr += chunk;
  });
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? `code ${code}`)),
  );
  return {
    child,
    lines,
    count: (message) => lines.filter((line) => line.msg === message).length,
    exited,
    stderr: () => stderr,
  };
}

/**
 * Sends `signal` and resolves with how the process ended (`code 0`, `SIGKILL`, …) and how long that
 * took; SIGKILLs it if it has not ended within `ms` (a test never hangs on it).
 */
export async function stopCli(
  worker: CliWorker,
  signal: NodeJS.Signals,
  ms = 10_000,
): Promise<{ exit: string; ms: number }> {
  const started = performance.now();
  worker.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      worker.child.kill('SIGKILL');
      resolve(`did not stop within ${ms} ms after ${signal}`);
    }, ms);
  });
  const exit = await Promise.race([worker.exited, forced]);
  clearTimeout(timer);
  await worker.exited;
  return { exit, ms: Math.round(performance.now() - started) };
}

/**
 * `warehouse-ingest serve` on the real broker with `configFile`, on free ports of 127.0.0.1:
 * resolves once it logs its listening line, with the URL it gives there.
 */
export async function startServe(
  configFile: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ service: CliWorker; url: string }> {
  const service = startCli(['serve'], {
    INGEST_CONFIG: configFile,
    AMQP_URL,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    ...env,
  });
  // vi.waitFor, not expect.poll: it works in a beforeAll too, and says the stderr of the moment.
  const listening = await vi.waitFor(
    () => {
      const line = service.lines.find((l) => String(l.msg).startsWith('listening on '));
      if (!line) throw new Error(`serve is not listening yet; stderr: ${service.stderr()}`);
      return line;
    },
    { timeout: 30_000, interval: 50 },
  );
  return { service, url: String(listening.url) };
}

/** Kills `service` (SIGKILL) if it is still running: for an afterAll, after a test that failed half-way. */
export function killIfRunning(service: CliWorker | undefined): void {
  if (service && service.child.exitCode === null && service.child.signalCode === null)
    service.child.kill('SIGKILL');
}

/**
 * For a describe block whose tests start worker processes: a test topology of its own (bound to
 * everything), and a list to put each started process in, SIGKILLed at the end if still running,
 * so a failed test leaves no process behind.
 */
export function useWorkerProcesses(prefix: string): {
  readonly topology: TestTopology;
  readonly workers: CliWorker[];
} {
  let topology: TestTopology | undefined;
  const workers: CliWorker[] = [];
  beforeAll(async () => {
    topology = await declareTestTopology({ bindingKeys: ['#'], prefix });
  });
  afterAll(async () => {
    for (const worker of workers)
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        await stopCli(worker, 'SIGKILL', 5000);
    await topology?.cleanup();
  });
  return {
    get topology() {
      if (!topology) throw new Error('the topology is declared in beforeAll');
      return topology;
    },
    workers,
  };
}

/**
 * A local drop for worker processes: a fresh folder, a pipeline file for DEMO's v1-CSV sales
 * orders (claimed by rename, polled every 200 ms, plus `pipelineLines`), and a configuration on
 * `topology` (plus `configYaml`). `env` is what `startCliWorker` needs to run it.
 */
export function workerDrop(
  topology: TestTopology,
  name: string,
  { pipelineLines = [], configYaml = '' }: { pipelineLines?: string[]; configYaml?: string } = {},
) {
  const temp = tempFolder(`${name}-`);
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  const pipeline = temp.write(
    `${name}.yaml`,
    [
      `name: ${name}`,
      'businessId: DEMO',
      'kind: sales-orders',
      'format: v1-csv',
      `source: { type: local, path: ${drop} }`,
      'readiness: { strategy: rename }',
      'schedule: { pollIntervalMs: 200 }',
      ...pipelineLines,
      '',
    ].join('\n'),
  );
  const config = temp.write(
    'config.yaml',
    `dataDirectory: ${temp.dir}/data\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\n${configYaml}`,
  );
  return { temp, drop, pipeline, env: { INGEST_CONFIG: config, AMQP_URL } };
}
