// A CSV drop under `serve` (not `run --once`): the same file, but a whole service around it — the
// HTTP listeners, the events consumer, the embedded history (on by default) and its worker thread.
// `serve` runs with `npm start`'s node flags and the peak-RSS preload (bench/peak-rss.mjs); the
// file is dropped once the service is ready, and the service is stopped (SIGTERM) once the file's
// receipt is in processed/ and the history has written the batch, so the peak covers the whole
// drop and the history's writes of its record rows. Called by bench/csv.mjs (the CSV part), which
// passes its own children bookkeeping and inputs so a cleanup stops this child too.
import { spawn } from 'node:child_process';
import {
  createWriteStream,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EXCHANGE, QUEUE } from './broker.mjs';
import { round } from './load.mjs';
import { ROOT, RUNTIME_FLAGS } from './servers.mjs';

const CLI = path.join(ROOT, 'dist/cli.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (kib) => (Number.isFinite(kib) ? round(kib / 1024, 1) : null);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The VmHWM of a live process in KiB, or 0. */
function hwmKiB(pid) {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * One `serve` with one local-folder pipeline; one N-line CSV dropped into it.
 * @param {object} o
 * @param {string} o.dir a fresh folder of this run (config, data, drop, pipelines)
 * @param {(child: import('node:child_process').ChildProcess, name: string) => any} o.track csv.mjs's
 * @param {(child: any, graceMs?: number) => Promise<void>} o.stop csv.mjs's
 * @param {(orders: number) => Iterable<string>} o.chunks the CSV, in chunks
 * @param {Record<string, string>} o.env the child's environment (csv.mjs's childEnv without INGEST_CONFIG)
 */
export async function serveDropRun({
  amqpUrl,
  dir,
  apiKeyHash,
  lines,
  orders,
  business,
  preload,
  track,
  stop,
  chunks,
  env,
  timeoutSeconds,
  extraEnv = {},
  nodeFlags = RUNTIME_FLAGS,
}) {
  const dropDir = path.join(dir, 'drop');
  const pipelines = path.join(dir, 'pipelines');
  mkdirSync(dropDir, { recursive: true });
  mkdirSync(pipelines, { recursive: true });
  const config = path.join(dir, 'serve.yaml');
  writeFileSync(
    config,
    [
      'tenants:',
      `  - businessId: ${business}`,
      `    apiKeyHash: ${JSON.stringify(apiKeyHash)}`,
      '    name: bench',
      `dataDirectory: ${JSON.stringify(path.join(dir, 'data'))}`,
      `pipelinesDirectory: ${JSON.stringify(pipelines)}`,
      'broker:',
      `  exchange: ${JSON.stringify(EXCHANGE)}`,
      '  queues:',
      `    - name: ${JSON.stringify(QUEUE)}`,
      '      bindingKeys: ["#"]',
      '      arguments: { x-queue-type: classic }',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  writeFileSync(
    path.join(pipelines, 'bench-serve-drop.yaml'),
    [
      'name: bench-serve-drop',
      `businessId: ${business}`,
      'kind: sales-orders',
      'format: v1-csv',
      'source:',
      '  type: local',
      `  path: ${JSON.stringify(dropDir)}`,
      'readiness:',
      '  strategy: rename',
      'schedule:',
      '  pollIntervalMs: 500',
      'after:',
      '  success: move',
      '  failure: move',
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const adminPort = await freePort();
  const peakFile = path.join(dir, 'peak-serve.json');
  const child = track(
    spawn(process.execPath, ['--import', preload, ...nodeFlags, CLI, 'serve'], {
      cwd: ROOT,
      env: {
        ...env,
        INGEST_CONFIG: config,
        AMQP_URL: amqpUrl,
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        BENCH_PEAK_FILE: peakFile,
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'serve (drop)',
  );
  const problems = [];
  const deadline = Date.now() + timeoutSeconds * 1000;
  const alive = () => child.exitCode === null && child.signalCode === null;
  let idleKiB = 0;
  let started = 0;
  let wallSeconds = null;
  try {
    while (alive()) {
      const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) throw new Error('serve not ready');
      await sleep(100);
    }
    if (!alive()) throw new Error(await child.died);
    idleKiB = hwmKiB(child.pid);
    const name = `orders-${lines}.csv`;
    await pipeline(
      Readable.from(chunks(orders)),
      createWriteStream(path.join(dropDir, `${name}.part`)),
    );
    started = performance.now();
    renameSync(path.join(dropDir, `${name}.part`), path.join(dropDir, name));
    const processed = path.join(dropDir, 'processed');
    let receipt;
    while (!receipt) {
      if (!alive()) throw new Error(await child.died);
      if (Date.now() > deadline) throw new Error(`no receipt within ${timeoutSeconds} s`);
      const file = (() => {
        try {
          return readdirSync(processed).find((f) => f.endsWith('.receipt.json'));
        } catch {
          return undefined;
        }
      })();
      if (file) receipt = JSON.parse(readFileSync(path.join(processed, file), 'utf8'));
      else await sleep(200);
    }
    wallSeconds = (performance.now() - started) / 1000;
    if (receipt.outcome !== 'accepted' || receipt.response?.recordCount !== orders)
      problems.push(
        `receipt: ${receipt.outcome}, recordCount ${receipt.response?.recordCount} (expected accepted, ${orders})`,
      );
    // The history writes the batch's record rows after the receipt: wait for the batch row's records.
    await waitForHistory({ adminPort, port, child, alive, deadline, orders, business, problems });
  } catch (error) {
    problems.push(error.message);
  }
  await stop(child, 30_000);
  let peak = null;
  try {
    peak = JSON.parse(readFileSync(peakFile, 'utf8'));
  } catch {
    problems.push('no peak file (the child died before its exit handler)');
  }
  return {
    lines,
    orders,
    wallSeconds: wallSeconds === null ? null : round(wallSeconds, 2),
    linesPerSecond: wallSeconds ? Math.round(lines / wallSeconds) : null,
    idlePeakRssMiB: mib(idleKiB),
    peakRssMiB: mib(peak?.vmHWMKiB),
    problems,
  };
}

/** Until the service's history has no rows waiting (its pending-rows gauge at 0), or the deadline. */
async function waitForHistory({ adminPort, alive, deadline, problems }) {
  while (alive() && Date.now() < deadline) {
    const text = await fetch(`http://127.0.0.1:${adminPort}/metrics`).then(
      (r) => r.text(),
      () => '',
    );
    const pending = /^warehouse_ingest_history_pending_rows(?:\{[^}]*\})? (\S+)$/m.exec(text);
    // No gauge: the history is off (or its metrics are); nothing to wait for.
    if (text && (!pending || Number(pending[1]) === 0)) return;
    await sleep(200);
  }
  problems.push('history rows still pending at the deadline');
}
