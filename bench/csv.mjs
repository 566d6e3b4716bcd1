// npm run bench -- --only=csv [--profile]
// The v1 CSV path at volume, on the built service and CLI against the same RabbitMQ, bench
// exchange and bounded queue as the JSON part (bench/broker.mjs). Prints figures, no thresholds;
// writes bench/results/csv-latest.json.
//  1. HTTP: one POST /api/v1/sales-orders (text/csv) of an N-line v1 sales-order CSV to a fresh
//     `node dist/cli.js serve` (development: business DEMO with its onboarding profile, but a random
//     key of its own — start-up refuses the public demo key with a real broker), for 100,000
//     and 200,000 lines: status, recordCount, time, lines/s, records/s, the server's peak RSS
//     (VmHWM) before and after the request.
//  2. File drops: `node dist/cli.js run <pipeline.yaml> --once` as a child on a local-folder drop
//     (readiness rename), for a 100,000- and a 1,000,000-line file written streamed to a temp
//     folder: wall time, lines/s, records/s, the child's peak RSS (VmHWM, read inside the child
//     at exit by bench/peak-rss.mjs, with a 50 ms poll from here as a cross-check), the summary
//     line and the receipt's recordCount.
// --profile: the same runs with every child under --cpu-prof (figures are then skewed, not
// written to csv-latest.json); prints where the CPU time goes (bench/results/profiles/csv-*.cpuprofile).
// Knobs: AMQP_URL, BENCH_CSV_HTTP_LINES (100000,200000), BENCH_CSV_FILE_LINES (100000,1000000),
// BENCH_CSV_TIMEOUT_SECONDS (240, per child run), BENCH_JSON_DROP_RECORDS (500000; 0 = no JSON drop),
// BENCH_CSV_LARGEST_AGAIN (1; 0 = the largest drop once).
//  3. The bare loop (bench/csv-bare.mjs: csv-parse → zod → confirm channel, nothing else) on a file
//     as large as the largest drop, before the drops and again after them, then the largest drop
//     once more: lines/s (each side the mean of its two runs) and peak RSS next to the drop's.
//  4. A v2-JSON drop (streamed, src/decode/json-array.ts) of BENCH_JSON_DROP_RECORDS sales orders:
//     records/s and peak RSS. --only=drops: 2–4 without the HTTP runs.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { EXCHANGE, QUEUE, openBroker, safeUrl } from './broker.mjs';
import { summarise } from './cpuprofile.mjs';
import { round } from './load.mjs';
import { serveDropRun } from './serve-drop.mjs';
import { ROOT, RUNTIME_FLAGS, brokerPid, cpuMs, hashKey } from './servers.mjs';
import { printDropTargets } from './targets.mjs';

const CLI = path.join(ROOT, 'dist/cli.js');
const PRELOAD = pathToFileURL(path.join(ROOT, 'bench/peak-rss.mjs')).href;
const BUSINESS_ID = 'DEMO'; // config/development.yaml's business, for its onboarding profile
/** A key of this run, hashed into the bench config's tenant (runCsvBench). */
const API_KEY = randomBytes(24).toString('hex');
const AUTHORIZATION = `Basic ${Buffer.from(`${BUSINESS_ID}:${API_KEY}`).toString('base64')}`;
const HEADER =
  'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice';
/** Line counts from a knob, rounded down to whole orders (two lines each). */
const sizes = (name, fallback) =>
  (process.env[name] ?? fallback)
    .split(',')
    .map((s) => Math.floor(Number(s.trim()) / 2) * 2)
    .filter((n) => n > 0);
const settings = {
  httpLines: sizes('BENCH_CSV_HTTP_LINES', '100000,200000'),
  fileLines: sizes('BENCH_CSV_FILE_LINES', '100000,1000000'),
  linesPerOrder: 2,
  timeoutSeconds: Number(process.env.BENCH_CSV_TIMEOUT_SECONDS ?? 240),
  jsonRecords: Number(process.env.BENCH_JSON_DROP_RECORDS ?? 500_000),
  // The largest CSV drop runs a second time, after the second bare loop (0: once only).
  largestAgain: process.env.BENCH_CSV_LARGEST_AGAIN !== '0',
  // Large enough for the biggest HTTP body and batch; the timeouts leave the service room on a busy 2-core machine.
  bodyLimitBytes: 256 * 1024 * 1024,
  maxRecordsPerBatch: 1_000_000,
  requestTimeoutMs: 600_000,
};

// ---- children, temp files, broker: cleaned on every exit path ---------------------------------

const children = new Set();
let temp;
let broker;
let cleaning;
/** Set once cleanup starts: a run whose child was stopped by it is an interruption, not a result. */
let stopping = false;
const checkInterrupted = () => {
  if (stopping) throw new Error('CSV bench interrupted');
};

function track(child, name) {
  children.add(child);
  child.output = '';
  let tail = '';
  child.stdout.on('data', (chunk) => (child.output += chunk));
  child.stderr.on('data', (chunk) => (tail = (tail + chunk).slice(-4000)));
  child.stderrTail = () => tail;
  child.exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  child.died = child.exited.then(
    ({ code, signal }) =>
      `${name} exited (${signal ?? `code ${code}`}): ${`${child.output.slice(-1500)}\n${tail}`.trim().split('\n').slice(-3).join(' | ')}`,
  );
  return child;
}

async function stop(child, graceMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  child.kill('SIGTERM');
  await child.exited;
  clearTimeout(timer);
}

/** Stops the children, removes the temp folder, the bench exchange, queue and policy. Idempotent. */
export function cleanupCsv() {
  stopping = true;
  if (cleaning) return cleaning;
  if (!temp && !broker && children.size === 0) return Promise.resolve();
  cleaning = (async () => {
    await Promise.all([...children].map((child) => stop(child, 5000)));
    if (temp) rmSync(temp, { recursive: true, force: true });
    temp = undefined;
    await broker?.remove();
    broker = undefined;
  })().finally(() => (cleaning = undefined));
  return cleaning;
}

process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  if (temp) rmSync(temp, { recursive: true, force: true });
});

// ---- inputs ----------------------------------------------------------------------------------

/** The CSV in chunks of `per` orders: a header, then two lines per order, unique order numbers. */
function* csvChunks(tag, orders, per = 2000) {
  yield `${HEADER}\n`;
  for (let i = 0; i < orders; i += per) {
    let text = '';
    for (let n = i, end = Math.min(orders, i + per); n < end; n++) {
      const order = `${tag}-${n}`;
      text += `${BUSINESS_ID},${order},2026-02-03,1,SKU-${n % 997},${1 + (n % 5)},EA,9.99\n${BUSINESS_ID},${order},2026-02-03,2,SKU-2,1,EA,4.50\n`;
    }
    yield text;
  }
}

/** A v2-JSON array of `count` sales orders (the valid fixture, business DEMO, unique shipment ids). */
function* jsonChunks(tag, count, per = 2000) {
  const [template] = JSON.parse(
    readFileSync(path.join(ROOT, 'fixtures/sales-orders/valid.json'), 'utf8'),
  );
  const record = (n) => {
    const shipmentId = `${tag}-${n}`;
    return {
      ...template,
      identifiers: {
        ...template.identifiers,
        shipmentId,
        businessId: BUSINESS_ID,
        ownerId: BUSINESS_ID,
      },
      shipAddresses: template.shipAddresses.map((a) => ({ ...a, shipmentId })),
      shipContacts: template.shipContacts.map((c) => ({ ...c, shipmentId })),
      shipmentLines: template.shipmentLines.map((l) => ({ ...l, shipmentId })),
    };
  };
  yield '[\n';
  for (let i = 0; i < count; i += per) {
    const parts = [];
    for (let n = i, end = Math.min(count, i + per); n < end; n++)
      parts.push(JSON.stringify(record(n)));
    yield `${parts.join(',\n')}${i + per < count ? ',\n' : '\n'}`;
  }
  yield ']\n';
}

/**
 * Runs of one thing (the bare loop, the largest drop) as one: the first run's figures, with the
 * mean wall time and lines/s, the larger peak RSS (a bound holds for every run), every run's
 * problems, and each run's figures kept.
 */
function meanOfRuns(runs) {
  if (runs.length === 0) return null;
  const mean = (pick) => {
    const values = runs.map(pick);
    return values.every((v) => typeof v === 'number')
      ? values.reduce((a, b) => a + b, 0) / values.length
      : null;
  };
  const wallSeconds = mean((r) => r.wallSeconds);
  const linesPerSecond = mean((r) => r.linesPerSecond);
  return {
    ...runs[0],
    wallSeconds: wallSeconds === null ? null : round(wallSeconds, 2),
    linesPerSecond: linesPerSecond === null ? null : Math.round(linesPerSecond),
    peakRssMiB: Math.max(...runs.map((r) => r.peakRssMiB ?? 0)) || null,
    problems: runs.flatMap((r) => r.problems),
    runs: runs.map((r) => ({
      wallSeconds: r.wallSeconds,
      linesPerSecond: r.linesPerSecond,
      peakRssMiB: r.peakRssMiB,
    })),
  };
}

/**
 * bench/csv-bare.mjs on an N-line file of the same shape (written first, not timed), as a child
 * with the same peak-RSS preload as `run --once`: wall time, lines/s, peak RSS.
 */
async function bareRun({ amqpUrl, lines, tag }) {
  const file = path.join(temp, `bare-${lines}.csv`);
  await pipeline(
    Readable.from(csvChunks(tag, lines / settings.linesPerOrder)),
    createWriteStream(file),
  );
  const peakFile = path.join(temp, `peak-bare-${lines}.json`);
  await broker.purge();
  globalThis.gc?.();
  const env = {
    ...childEnv('', { AMQP_URL: amqpUrl, BENCH_PEAK_FILE: peakFile }),
    BENCH_EXCHANGE: EXCHANGE,
    BENCH_ROUTING_KEY: `sales-orders.${BUSINESS_ID}`,
  };
  const started = performance.now();
  const child = track(
    spawn(process.execPath, ['--import', PRELOAD, path.join(ROOT, 'bench/csv-bare.mjs'), file], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'csv-bare',
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
  const { code, signal } = await child.exited;
  clearTimeout(timer);
  const wallSeconds = (performance.now() - started) / 1000;
  checkInterrupted();
  rmSync(file, { force: true });
  const problems = [];
  let out = null;
  try {
    out = JSON.parse(child.output.trim().split('\n').pop());
  } catch {
    problems.push(
      `bare loop exited with ${signal ?? `code ${code}`}: ${child.stderrTail().trim().split('\n').slice(-3).join(' | ')}`,
    );
  }
  let peak = null;
  try {
    peak = JSON.parse(readFileSync(peakFile, 'utf8'));
  } catch {}
  return {
    lines,
    records: out?.records ?? null,
    wallSeconds: round(wallSeconds, 2),
    linesPerSecond: out ? Math.round(lines / wallSeconds) : null,
    peakRssMiB: mib(peak?.vmHWMKiB),
    problems,
  };
}

function writeConfig(file, dir, apiKeyHash) {
  const yaml = [
    '# warehouse-ingest CSV bench: merged over config/development.yaml (the DEMO onboarding profile stays)',
    'tenants:',
    `  - businessId: ${BUSINESS_ID}`,
    `    apiKeyHash: ${JSON.stringify(apiKeyHash)}`,
    '    name: bench',
    `dataDirectory: ${JSON.stringify(path.join(dir, 'data'))}`,
    `pipelinesDirectory: ${JSON.stringify(path.join(dir, 'no-pipelines'))}`,
    'http:',
    `  bodyLimitBytes: ${settings.bodyLimitBytes}`,
    `  maxRecordsPerBatch: ${settings.maxRecordsPerBatch}`,
    `  requestTimeoutMs: ${settings.requestTimeoutMs}`,
    'broker:',
    `  exchange: ${JSON.stringify(EXCHANGE)}`,
    '  queues:',
    `    - name: ${JSON.stringify(QUEUE)}`,
    '      bindingKeys: ["#"]',
    // broker.mjs declares the bench queue classic (bounded by its max-length policy), as the JSON
    // part does: the service's default, a quorum queue, would refuse it by name.
    '      arguments: { x-queue-type: classic }',
    '',
  ].join('\n');
  writeFileSync(file, yaml, { mode: 0o600 }); // it holds a key hash: the service refuses a readable one
  mkdirSync(path.join(dir, 'no-pipelines'), { recursive: true });
}

function writePipeline(file, name, dropDir, format = 'v1-csv') {
  const mapped = format === 'csv';
  if (mapped) writeFileSync(path.join(path.dirname(file), 'v1-orders.jsonata'), V1_ORDERS_MAPPING);
  const yaml = [
    `name: ${name}`,
    `businessId: ${BUSINESS_ID}`,
    'kind: sales-orders',
    `format: ${format}`,
    ...(mapped ? ['mapping:', '  groupBy: OrdNumber', '  file: v1-orders.jsonata'] : []),
    'source:',
    '  type: local',
    `  path: ${JSON.stringify(dropDir)}`,
    'readiness:',
    '  strategy: rename',
    'after:',
    '  success: move',
    '  failure: move',
    '',
  ].join('\n');
  writeFileSync(file, yaml);
}

/**
 * The mapped-CSV bench's mapping (`format: csv`, docs/formats.md): the v1 sales-order CSV read as
 * a partner's own layout, one group of rows per OrdNumber, made into the records the v1 converter
 * makes of it — the same file content through the JSONata path.
 */
const V1_ORDERS_MAPPING = `(
  $o := $[0];
  {
    "identifiers": { "shipmentId": $o.OrdNumber },
    "order": { "customerRef": $o.OrdNumber },
    "dates": { "dueOut": $o.DueOutDate & "T00:00:00Z", "shipment": $o.DueOutDate & "T00:00:00Z" },
    "financial": { "lineValue": $sum($.($number(oOrderLines_Qty) * $number(oOrderLines_SalesUnitPrice))) },
    "shipmentLines": [$.{
      "line": oOrderLines_LineNumber,
      "skuId": oOrderLines_ProductID,
      "product": { "unitOfMeasure": oOrderLines_UoM },
      "quantities": { "ordered": $number(oOrderLines_Qty), "required": $number(oOrderLines_Qty) },
      "financial": { "price": $number(oOrderLines_SalesUnitPrice) }
    }]
  }
)
`;

// ---- measuring -------------------------------------------------------------------------------

/** A `VmXxx` line of /proc/<pid>/status in KiB; null when the process is gone. */
function procKiB(pid, field) {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    )?.[1];
    return kb ? Number(kb) : null;
  } catch {
    return null;
  }
}
const mib = (kib) =>
  typeof kib === 'number' && Number.isFinite(kib) ? round(kib / 1024, 1) : null;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function childEnv(config, extra) {
  // INGEST_* and friends from the caller's shell must not change what is measured.
  const env = { ...process.env };
  for (const key of [
    'INGEST_ENV',
    'INGEST_CONFIG',
    'PORT',
    'HOST',
    'ADMIN_PORT',
    'ADMIN_HOST',
    'AMQP_URL',
    'LOG_LEVEL',
    'NODE_OPTIONS',
  ])
    delete env[key];
  return { ...env, INGEST_ENV: 'development', INGEST_CONFIG: config, ...extra };
}

async function startServe(amqpUrl, config, nodeArgs) {
  const port = await freePort();
  const adminPort = await freePort();
  const env = childEnv(config, {
    AMQP_URL: amqpUrl,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  });
  const child = track(
    spawn(process.execPath, [...RUNTIME_FLAGS, ...nodeArgs, CLI, 'serve'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'service',
  );
  const url = `http://127.0.0.1:${port}`;
  const died = child.died.then((why) => Promise.reject(new Error(why)));
  died.catch(() => {});
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const ready = await Promise.race([
      // /readyz is on the admin listener (admin.port).
      fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      ),
      died,
    ]);
    if (ready) return { url, child };
    await Promise.race([sleep(100), died]);
  }
  throw new Error('service /readyz not ready within 20000 ms');
}

/** One POST of an N-line CSV to a fresh service; its peak RSS before and after. */
async function httpRun({ amqpUrl, config, lines, tag, nodeArgs }) {
  const orders = lines / settings.linesPerOrder;
  const body = Buffer.from([...csvChunks(tag, orders)].join(''));
  const server = await startServe(amqpUrl, config, nodeArgs);
  const { pid } = server.child;
  try {
    // The first authenticated request runs scrypt (N=2^15, 32 MiB); done here so it is not in the request's peak.
    const warm = await fetch(`${server.url}/api/v1/customer/${BUSINESS_ID}/stock`, {
      headers: { authorization: AUTHORIZATION },
    });
    await warm.arrayBuffer();
    if (warm.status === 401)
      throw new Error(
        "the bench tenant's key was refused: is the DEMO onboarding profile unchanged?",
      );
    await broker.purge();
    await sleep(200);
    const beam = brokerPid();
    const before = {
      hwm: procKiB(pid, 'VmHWM'),
      rss: procKiB(pid, 'VmRSS'),
      cpu: cpuMs(pid),
      broker: beam ? cpuMs(beam) : null,
    };
    const started = performance.now();
    const died = server.child.died.then((why) => Promise.reject(new Error(why)));
    died.catch(() => {});
    const response = await Promise.race([
      fetch(`${server.url}/api/v1/sales-orders`, {
        method: 'POST',
        headers: { authorization: AUTHORIZATION, 'content-type': 'text/csv' },
        body,
      }),
      died,
    ]);
    const text = await response.text();
    const seconds = (performance.now() - started) / 1000;
    checkInterrupted();
    const after = {
      hwm: procKiB(pid, 'VmHWM'),
      rss: procKiB(pid, 'VmRSS'),
      cpu: cpuMs(pid),
      broker: beam ? cpuMs(beam) : null,
    };
    let answer;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = { raw: text.slice(0, 400) };
    }
    const recordCount = answer.recordCount ?? null;
    const records = response.status === 202 ? recordCount : 0;
    const problems = [];
    if (response.status !== 202) problems.push(`status ${response.status}: ${text.slice(0, 400)}`);
    else if (recordCount !== orders || answer.messageIds?.length !== orders)
      problems.push(
        `recordCount ${recordCount}, ${answer.messageIds?.length} message ids, expected ${orders}`,
      );
    return {
      lines,
      orders,
      bodyMiB: round(body.length / 1048576, 1),
      status: response.status,
      recordCount,
      seconds: round(seconds, 2),
      linesPerSecond: records ? Math.round(lines / seconds) : null,
      recordsPerSecond: Math.round(records / seconds),
      serverCpuSeconds: round((after.cpu - before.cpu) / 1000, 2),
      serverUsPerRecord: records ? round(((after.cpu - before.cpu) * 1000) / records, 1) : null,
      brokerCpuSeconds:
        before.broker === null ? null : round((after.broker - before.broker) / 1000, 2),
      peakRssBeforeMiB: mib(before.hwm),
      peakRssAfterMiB: mib(after.hwm),
      peakRssGrowthMiB: mib(after.hwm - before.hwm),
      rssAfterMiB: mib(after.rss),
      responseMiB: round(Buffer.byteLength(text) / 1048576, 1),
      problems,
    };
  } finally {
    await stop(server.child, 15_000);
  }
}

/**
 * Writes an N-line file into a fresh drop (as .part, then renamed) and runs `run --once` on it.
 * `json`: a v2-JSON file of `json` sales orders instead (`lines` is then the record count).
 */
async function fileRun({
  amqpUrl,
  config,
  lines,
  tag,
  nodeArgs,
  json = 0,
  again = false,
  mapped = false,
  timeoutSeconds = settings.timeoutSeconds,
}) {
  const orders = json || lines / settings.linesPerOrder;
  // A run again gets its own drop, pipeline and state: a new input, not a reprocessing.
  const label = `${json ? `json-${json}` : `${mapped ? 'mapped-' : ''}${lines}`}${again ? '-again' : ''}`;
  const dropDir = path.join(temp, `drop-${label}`);
  mkdirSync(dropDir, { recursive: true });
  const name = json ? `orders-${json}.json` : `orders-${lines}.csv`;
  const generating = performance.now();
  await pipeline(
    Readable.from(json ? jsonChunks(tag, json) : csvChunks(tag, orders)),
    createWriteStream(path.join(dropDir, `${name}.part`)),
  );
  renameSync(path.join(dropDir, `${name}.part`), path.join(dropDir, name));
  const generateSeconds = (performance.now() - generating) / 1000;
  const fileMiB = round(statSync(path.join(dropDir, name)).size / 1048576, 1);
  const pipelineFile = path.join(temp, `pipeline-${label}.yaml`);
  writePipeline(
    pipelineFile,
    `bench-${json ? 'json' : 'csv'}-${label}`,
    dropDir,
    json ? 'v2-json' : mapped ? 'csv' : 'v1-csv',
  );
  const peakFile = path.join(temp, `peak-${label}.json`);

  await broker.purge();
  globalThis.gc?.();
  const beam = brokerPid();
  const brokerBefore = beam ? cpuMs(beam) : null;
  const env = childEnv(config, { AMQP_URL: amqpUrl, LOG_LEVEL: 'info', BENCH_PEAK_FILE: peakFile });
  const started = performance.now();
  const child = track(
    spawn(
      process.execPath,
      ['--import', PRELOAD, ...nodeArgs, CLI, 'run', pipelineFile, '--once'],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    ),
    'run --once',
  );
  let polledKiB = 0;
  const poll = setInterval(
    () => (polledKiB = Math.max(polledKiB, procKiB(child.pid, 'VmHWM') ?? 0)),
    50,
  );
  // The peak so far when the child logs "batch accepted" (every message confirmed; the receipt and
  // state files are still to be written): splits the peak between ingesting and settling the file.
  let acceptedKiB = null;
  const onOutput = () => {
    if (!child.output.includes('"msg":"batch accepted"')) return;
    acceptedKiB = procKiB(child.pid, 'VmHWM');
    child.stdout.off('data', onOutput);
  };
  child.stdout.on('data', onOutput);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
  const { code, signal } = await child.exited;
  const wallSeconds = (performance.now() - started) / 1000;
  clearInterval(poll);
  clearTimeout(timer);
  const brokerAfter = beam ? cpuMs(beam) : null;
  checkInterrupted();

  const problems = [];
  if (code !== 0)
    problems.push(
      `run --once exited with ${signal ?? `code ${code}`}${signal === 'SIGKILL' ? ` (timeout ${timeoutSeconds} s?)` : ''}: ${child.stderrTail().trim().split('\n').slice(-3).join(' | ')}`,
    );
  const parsed = child.output
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        return { unparsed: line };
      }
    });
  const summaryLine =
    child.output.split('\n').find((line) => line.startsWith('{"pipeline"')) ?? null;
  const summary = summaryLine ? JSON.parse(summaryLine) : null;
  const batchLog = parsed.find((entry) => entry.msg === 'batch accepted');
  const warnings = parsed
    .filter((entry) => ['warn', 'error', 'fatal'].includes(entry.level))
    .map((entry) => `${entry.msg}${entry.reason ? `: ${entry.reason}` : ''}`);
  if (!summary) problems.push('no summary line on stdout');
  else if (summary.accepted !== 1)
    problems.push(`summary: accepted ${summary.accepted} (expected 1)`);
  problems.push(...warnings.slice(0, 3).map((w) => `log: ${w}`));

  let receipt = null;
  try {
    const processed = path.join(dropDir, 'processed');
    const receiptFile = readdirSync(processed).find((f) => f.endsWith('.receipt.json'));
    const parsedReceipt = JSON.parse(readFileSync(path.join(processed, receiptFile), 'utf8'));
    receipt = {
      outcome: parsedReceipt.outcome,
      recordCount: parsedReceipt.response?.recordCount ?? null,
      messageIds: parsedReceipt.response?.messageIds?.length ?? null,
      sizeMiB: round(statSync(path.join(processed, receiptFile)).size / 1048576, 1),
    };
    if (
      receipt.outcome !== 'accepted' ||
      receipt.recordCount !== orders ||
      receipt.messageIds !== orders
    )
      problems.push(
        `receipt: ${receipt.outcome}, recordCount ${receipt.recordCount}, ${receipt.messageIds} message ids (expected accepted, ${orders})`,
      );
  } catch (error) {
    problems.push(`no readable receipt in processed/: ${error.message}`);
  }
  let peak = null;
  try {
    peak = JSON.parse(readFileSync(peakFile, 'utf8'));
  } catch {
    // the child died before its exit handler: only the poll is left
  }
  rmSync(dropDir, { recursive: true, force: true });
  const records = receipt?.recordCount === orders ? orders : 0;
  return {
    lines,
    orders,
    fileMiB,
    generateSeconds: round(generateSeconds, 2),
    exit: signal ?? code,
    summary: summaryLine,
    accepted: summary?.accepted ?? null,
    receiptRecordCount: receipt?.recordCount ?? null,
    receiptMiB: receipt?.sizeMiB ?? null,
    wallSeconds: round(wallSeconds, 2),
    ingestSeconds: typeof batchLog?.ms === 'number' ? round(batchLog.ms / 1000, 2) : null,
    // Of those, the validation pass, and whether it ran in two halves at once (src/ingest/halves.ts).
    validateSeconds:
      typeof batchLog?.validateMs === 'number' ? round(batchLog.validateMs / 1000, 2) : null,
    validatedInHalves: batchLog?.validatedInHalves === true,
    linesPerSecond: records ? Math.round(lines / wallSeconds) : null,
    recordsPerSecond: Math.round(records / wallSeconds),
    childCpuSeconds: peak ? round((peak.cpuUserMs + peak.cpuSystemMs) / 1000, 2) : null,
    childUsPerRecord:
      peak && records ? round(((peak.cpuUserMs + peak.cpuSystemMs) * 1000) / records, 1) : null,
    brokerCpuSeconds: brokerBefore === null ? null : round((brokerAfter - brokerBefore) / 1000, 2),
    peakRssMiB: mib(peak?.vmHWMKiB) ?? mib(polledKiB),
    peakRssPolledMiB: mib(polledKiB),
    peakRssAtBatchAcceptedMiB: mib(acceptedKiB),
    heapUsedAtExitMiB: mib(peak?.heapUsedKiB),
    problems,
  };
}

// ---- the mapped CSV (--only=mapped) -----------------------------------------------------------

/**
 * `npm run bench -- --only=mapped`: the same N-line v1 sales-order CSV dropped twice, as
 * `format: v1-csv` and as `format: csv` through a JSONata mapping (V1_ORDERS_MAPPING, grouped
 * by OrdNumber), alternated: records/s of each, the ratio, and the mapped drop's peak RSS.
 * Targets: peak RSS ≤ 256 MiB, records/s ≥ 0.5× the v1-csv drop's. Knobs: BENCH_MAPPED_LINES
 * (1000000), BENCH_MAPPED_ROUNDS (1), BENCH_MAPPED_TIMEOUT_SECONDS (900, per child run).
 */
export async function runMappedBench({ amqpUrl, resultsDir }) {
  const lines = sizes('BENCH_MAPPED_LINES', '1000000')[0];
  const rounds = Number(process.env.BENCH_MAPPED_ROUNDS ?? 1);
  const timeoutSeconds = Number(process.env.BENCH_MAPPED_TIMEOUT_SECONDS ?? 900);
  stopping = false;
  broker = await openBroker(amqpUrl);
  await broker.declare();
  try {
    temp = mkdtempSync(path.join(os.tmpdir(), 'ingest-bench-mapped-'));
    const config = path.join(temp, 'bench.yaml');
    writeConfig(config, temp, await hashKey(API_KEY));
    const tag = `M${Date.now().toString(36)}`;
    console.log(
      `\nmapped CSV bench — node ${process.version}, ${os.cpus().length} CPUs (load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )}), ${lines} lines (${lines / settings.linesPerOrder} orders), ${rounds} round(s)`,
    );
    const runs = { v1: [], mapped: [] };
    for (let round = 0; round < rounds; round++) {
      for (const mapped of [false, true]) {
        const r = await fileRun({
          amqpUrl,
          config,
          lines,
          tag: `${tag}-${mapped ? 'C' : 'V'}${round}`,
          nodeArgs: [],
          mapped,
          again: round > 0,
          timeoutSeconds,
        });
        (mapped ? runs.mapped : runs.v1).push(r);
        console.log(
          `  ${mapped ? 'csv + mapping' : 'v1-csv       '} round ${round + 1}: wall ${r.wallSeconds} s (validation ${r.validateSeconds ?? '?'} s${r.validatedInHalves ? ' in two halves' : ''}), ${r.recordsPerSecond} records/s; CPU child ${r.childCpuSeconds ?? '?'} s (${r.childUsPerRecord ?? '-'} µs/record); peak RSS ${r.peakRssMiB} MiB; load ${os.loadavg()[0].toFixed(2)}`,
        );
        for (const p of r.problems) console.log(`    PROBLEM: ${p}`);
      }
    }
    const mean = (list) => list.reduce((n, r) => n + r.recordsPerSecond, 0) / list.length;
    const ratio = round(mean(runs.mapped) / mean(runs.v1), 2);
    const peak = Math.max(...runs.mapped.map((r) => r.peakRssMiB ?? 0));
    console.log(
      `\n  mapped vs v1-csv records/s: ${Math.round(mean(runs.mapped))} vs ${Math.round(mean(runs.v1))} = ${ratio}× (target ≥ 0.5×: ${ratio >= 0.5 ? 'met' : 'MISSED'}); mapped peak RSS ${peak} MiB (target ≤ 256: ${peak <= 256 ? 'met' : 'MISSED'})`,
    );
    const problems = [...runs.v1, ...runs.mapped].reduce((n, r) => n + r.problems.length, 0);
    if (problems) process.exitCode = 1;
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(
      path.join(resultsDir, 'mapped-latest.json'),
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, loadAverage: os.loadavg(), lines, ratio, peakRssMiB: peak, runs }, null, 2)}\n`,
    );
  } finally {
    await cleanupCsv();
  }
}

// ---- the CSV part ----------------------------------------------------------------------------

export async function runCsvBench({ amqpUrl, profile = false, resultsDir, dropsOnly = false }) {
  const started = performance.now();
  const profileDir = path.join(resultsDir, 'profiles');
  const nodeArgs = (name) =>
    profile
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
  stopping = false;
  broker = await openBroker(amqpUrl);
  const bounded = await broker.declare();
  try {
    temp = mkdtempSync(path.join(os.tmpdir(), 'ingest-bench-csv-'));
    const config = path.join(temp, 'bench.yaml');
    writeConfig(config, temp, await hashKey(API_KEY));
    const tag = `B${Date.now().toString(36)}`;

    console.log(
      `\nwarehouse-ingest CSV bench — node ${process.version}, ${os.cpus().length} CPUs (load average ${os.loadavg()[0].toFixed(2)}), RabbitMQ ${broker.version} at ${safeUrl(amqpUrl)}`,
    );
    console.log(
      `v1 sales orders, ${settings.linesPerOrder} lines per order, business ${BUSINESS_ID} (development config); queue ${QUEUE} (${bounded || 'no policy: rabbitmqctl unavailable'}; purged before every run)${profile ? '; every child under --cpu-prof' : ''}`,
    );

    const http = [];
    console.log('\nHTTP: one POST /api/v1/sales-orders (text/csv) per run, fresh `serve` each');
    for (const lines of dropsOnly ? [] : settings.httpLines) {
      const r = await httpRun({
        amqpUrl,
        config,
        lines,
        tag: `${tag}-H${lines}`,
        nodeArgs: nodeArgs(`csv-serve-${lines}`),
      });
      http.push(r);
      console.log(
        `  ${String(lines).padStart(8)} lines (${r.bodyMiB} MiB): ${r.status}, recordCount ${r.recordCount}, ${r.seconds} s, ${r.linesPerSecond} lines/s, ${r.recordsPerSecond} records/s;` +
          ` CPU server ${r.serverCpuSeconds} s (${r.serverUsPerRecord ?? '-'} µs/record), broker ${r.brokerCpuSeconds ?? '?'} s; peak RSS ${r.peakRssBeforeMiB} → ${r.peakRssAfterMiB} MiB (+${r.peakRssGrowthMiB})`,
      );
      for (const p of r.problems) console.log(`    PROBLEM: ${p}`);
    }

    const files = [];
    console.log(
      '\nfile drops: `run <pipeline.yaml> --once` per file, local folder, readiness rename',
    );
    // The bare loop runs before the drops and again after the largest: the machine's speed drifts
    // by 10-15% over minutes here, and the ratio uses the mean of the two.
    const bareLines = settings.fileLines.at(-1);
    const bareRuns = [];
    const bareOnce = async (when) => {
      const run = await bareRun({ amqpUrl, lines: bareLines, tag: `${tag}-R${when}${bareLines}` });
      bareRuns.push(run);
      console.log(
        `  bare loop ${when} (csv-parse → zod → confirm channel, bench/csv-bare.mjs), ${run.lines} lines: ${run.wallSeconds} s, ${run.linesPerSecond} lines/s; peak RSS ${run.peakRssMiB} MiB`,
      );
      for (const p of run.problems) console.log(`    PROBLEM: ${p}`);
    };
    if (bareLines && !profile) await bareOnce('before');
    for (const lines of settings.fileLines) {
      const r = await fileRun({
        amqpUrl,
        config,
        lines,
        tag: `${tag}-F${lines}`,
        nodeArgs: nodeArgs(`csv-run-${lines}`),
      });
      files.push(r);
      console.log(
        `  ${String(lines).padStart(8)} lines (${r.fileMiB} MiB, written in ${r.generateSeconds} s): ${r.summary ?? '(no summary line)'}`,
      );
      console.log(
        `           receipt recordCount ${r.receiptRecordCount} (${r.receiptMiB} MiB); wall ${r.wallSeconds} s (ingest ${r.ingestSeconds ?? '?'} s, of which validation ${r.validateSeconds ?? '?'} s${r.validatedInHalves ? ' in two halves' : ''}), ${r.linesPerSecond} lines/s, ${r.recordsPerSecond} records/s;` +
          ` CPU child ${r.childCpuSeconds ?? '?'} s (${r.childUsPerRecord ?? '-'} µs/record), broker ${r.brokerCpuSeconds ?? '?'} s; peak RSS ${r.peakRssMiB} MiB (${r.peakRssAtBatchAcceptedMiB ?? '?'} when the batch was accepted; poll ${r.peakRssPolledMiB})`,
      );
      for (const p of r.problems) console.log(`    PROBLEM: ${p}`);
    }

    // The bare loop again, then the largest drop again: each side measured twice, alternated, and
    // the ratio taken of the means (one slow minute of this machine moved a single pair by ±0.05).
    if (bareRuns.length > 0) await bareOnce('after');
    const bare = meanOfRuns(bareRuns);
    const largestRuns = files.length > 0 ? [files.at(-1)] : [];
    if (bare && largestRuns.length > 0 && settings.largestAgain) {
      const lines = largestRuns[0].lines;
      const again = await fileRun({
        amqpUrl,
        config,
        lines,
        tag: `${tag}-F${lines}b`,
        nodeArgs: [],
        again: true,
      });
      largestRuns.push(again);
      console.log(
        `  ${String(lines).padStart(8)} lines again: ${again.summary ? 'accepted' : '(no summary line)'}; wall ${again.wallSeconds} s (ingest ${again.ingestSeconds ?? '?'} s, of which validation ${again.validateSeconds ?? '?'} s${again.validatedInHalves ? ' in two halves' : ''}), ${again.linesPerSecond} lines/s; CPU child ${again.childCpuSeconds ?? '?'} s (${again.childUsPerRecord ?? '-'} µs/record); peak RSS ${again.peakRssMiB} MiB`,
      );
      for (const p of again.problems) console.log(`    PROBLEM: ${p}`);
    }
    const largest = meanOfRuns(largestRuns);
    // The v2-JSON drop (streamed).
    const jsonDrop = settings.jsonRecords
      ? await fileRun({
          amqpUrl,
          config,
          lines: settings.jsonRecords,
          json: settings.jsonRecords,
          tag: `${tag}-J${settings.jsonRecords}`,
          nodeArgs: nodeArgs(`json-run-${settings.jsonRecords}`),
        })
      : null;
    if (jsonDrop) {
      console.log(
        `  v2-JSON drop, ${settings.jsonRecords} records (${jsonDrop.fileMiB} MiB, written in ${jsonDrop.generateSeconds} s): ${jsonDrop.summary ?? '(no summary line)'}`,
      );
      console.log(
        `           receipt recordCount ${jsonDrop.receiptRecordCount}; wall ${jsonDrop.wallSeconds} s (ingest ${jsonDrop.ingestSeconds ?? '?'} s, of which validation ${jsonDrop.validateSeconds ?? '?'} s${jsonDrop.validatedInHalves ? ' in two halves' : ''}), ${jsonDrop.recordsPerSecond} records/s; CPU child ${jsonDrop.childCpuSeconds ?? '?'} s (${jsonDrop.childUsPerRecord ?? '-'} µs/record); peak RSS ${jsonDrop.peakRssMiB} MiB (poll ${jsonDrop.peakRssPolledMiB})`,
      );
      for (const p of jsonDrop.problems) console.log(`    PROBLEM: ${p}`);
    }

    // The largest CSV again under `serve` with `npm start`'s flags (bench/serve-drop.mjs): the same
    // file with a whole service around it — HTTP, the events consumer, the history and its worker.
    const serveLines = settings.fileLines.at(-1);
    const serveDrop = serveLines
      ? await serveDropRun({
          amqpUrl,
          dir: mkdtempSync(path.join(temp, 'serve-drop-')),
          apiKeyHash: await hashKey(API_KEY),
          lines: serveLines,
          orders: serveLines / settings.linesPerOrder,
          business: BUSINESS_ID,
          preload: PRELOAD,
          track,
          stop,
          chunks: (orders) => csvChunks(`${tag}-S${serveLines}`, orders),
          env: childEnv(config, {}),
          timeoutSeconds: settings.timeoutSeconds,
        })
      : null;
    if (serveDrop) {
      console.log(
        `  ${serveDrop.lines} lines under serve (npm start's flags, the history on): wall ${serveDrop.wallSeconds} s, ${serveDrop.linesPerSecond} lines/s; peak RSS ${serveDrop.peakRssMiB} MiB (${serveDrop.idlePeakRssMiB} before the file; target ≤ 256)`,
      );
      for (const p of serveDrop.problems) console.log(`    PROBLEM: ${p}`);
    }

    printTables(http, files);
    const bareRatio =
      bare?.linesPerSecond && largest?.linesPerSecond
        ? round(largest.linesPerSecond / bare.linesPerSecond, 2)
        : null;
    if (bare)
      console.log(
        `\n  ${largest.lines}-line drop vs the bare loop: ${largest.linesPerSecond} (mean of ${largest.runs.map((r) => r.linesPerSecond).join(' and ')}) vs ${bare.linesPerSecond} lines/s (mean of ${bare.runs.map((r) => r.linesPerSecond).join(' and ')}) = ${bareRatio ?? '-'}×; peak RSS ${largest.peakRssMiB} vs ${bare.peakRssMiB} MiB`,
      );
    printDropTargets({
      csvSmall: files.length > 1 ? files[0] : null,
      csvLarge: largest,
      bareRatio,
      json: jsonDrop && {
        records: settings.jsonRecords,
        peakRssMiB: jsonDrop.peakRssMiB,
        validateSeconds: jsonDrop.validateSeconds,
        validatedInHalves: jsonDrop.validatedInHalves,
      },
    });
    const totalSeconds = round((performance.now() - started) / 1000, 1);
    const problems = [
      ...http,
      ...files,
      ...largestRuns.slice(1),
      ...(bare ? [bare] : []),
      ...(jsonDrop ? [jsonDrop] : []),
      ...(serveDrop ? [serveDrop] : []),
    ].reduce((n, r) => n + r.problems.length, 0);
    console.log(
      `\nCSV part: ${totalSeconds} s${problems ? `; ${problems} PROBLEM(S), see above` : ''}`,
    );
    if (problems) process.exitCode = 1;
    if (profile) {
      await cleanupCsv();
      for (const name of [
        ...settings.httpLines.map((l) => `csv-serve-${l}`),
        ...settings.fileLines.map((l) => `csv-run-${l}`),
      ])
        printProfile(path.join(profileDir, `${name}.cpuprofile`), name);
      console.log(
        `\nprofiles in ${path.relative(process.cwd(), profileDir)} (open in Chrome DevTools → Performance)`,
      );
      return;
    }
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, dropsOnly ? 'csv-latest-drops.json' : 'csv-latest.json');
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      loadAverage1m: round(os.loadavg()[0], 2),
      rabbitmq: broker.version,
      broker: safeUrl(amqpUrl),
      queueBound: bounded || 'purge only',
      totalSeconds,
    };
    writeFileSync(
      file,
      `${JSON.stringify({ ...meta, settings, http, files, largestAgain: largestRuns[1] ?? null, bare, bareRatio, jsonDrop, serveDrop }, null, 2)}\n`,
    );
    console.log(`written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await cleanupCsv();
  }
}

function printTables(http, files) {
  const table = (title, cols, rows) => {
    const width = (i) =>
      Math.max(cols[i][0].length, ...rows.map((r) => String(cols[i][1](r) ?? '-').length));
    console.log(`\n${title}`);
    console.log(cols.map((c, i) => c[0].padStart(width(i))).join('  '));
    for (const r of rows)
      console.log(cols.map((c, i) => String(c[1](r) ?? '-').padStart(width(i))).join('  '));
  };
  if (http.length)
    table(
      'HTTP v1 CSV, one request per fresh server; server peak RSS (VmHWM) in MiB before and after it',
      [
        ['lines', (r) => r.lines],
        ['body MiB', (r) => r.bodyMiB],
        ['status', (r) => r.status],
        ['recordCount', (r) => r.recordCount],
        ['seconds', (r) => r.seconds],
        ['lines/s', (r) => r.linesPerSecond],
        ['records/s', (r) => r.recordsPerSecond],
        ['srv µs/rec', (r) => r.serverUsPerRecord],
        ['before', (r) => r.peakRssBeforeMiB],
        ['after', (r) => r.peakRssAfterMiB],
        ['growth', (r) => r.peakRssGrowthMiB],
      ],
      http,
    );
  if (http.length >= 2) {
    const [small, large] = [http[0], http[http.length - 1]];
    const more = Math.max(1, large.orders - small.orders);
    const perRecord = (mibs) => Math.round((mibs * 1048576) / more);
    // What the growth should be made of: the raw body, kept for the two passes, and the message-id
    // list (a 36-character string, ~56 bytes in V8, plus its array slot) with its copy in the answer.
    const body = perRecord(large.bodyMiB - small.bodyMiB);
    console.log(
      `\n  server peak growth ${small.lines} → ${large.lines} lines: +${round(large.peakRssGrowthMiB - small.peakRssGrowthMiB, 1)} MiB for ${more} more records = ${perRecord(large.peakRssGrowthMiB - small.peakRssGrowthMiB)} bytes/record` +
        ` (raw body ${body} bytes/record, message-id list ~64 + answer ~39 bytes/record)`,
    );
  }
  table(
    'file drops, run --once; child peak RSS (VmHWM) in MiB when the batch was accepted and at exit (and by a 50 ms poll)',
    [
      ['lines', (r) => r.lines],
      ['file MiB', (r) => r.fileMiB],
      ['accepted', (r) => r.accepted],
      ['recordCount', (r) => r.receiptRecordCount],
      ['wall s', (r) => r.wallSeconds],
      ['ingest s', (r) => r.ingestSeconds],
      ['lines/s', (r) => r.linesPerSecond],
      ['records/s', (r) => r.recordsPerSecond],
      ['cpu µs/rec', (r) => r.childUsPerRecord],
      ['at accept', (r) => r.peakRssAtBatchAcceptedMiB],
      ['at exit', (r) => r.peakRssMiB],
      ['polled', (r) => r.peakRssPolledMiB],
    ],
    files,
  );
  if (files.length >= 2) {
    const [small, large] = [files[0], files[files.length - 1]];
    const grow = round(large.peakRssMiB - small.peakRssMiB, 1);
    console.log(
      `\n  peak RSS side by side: ${small.lines} lines ${small.peakRssMiB} MiB | ${large.lines} lines ${large.peakRssMiB} MiB (+${grow} MiB for ${large.orders - small.orders} more records: ${round((grow * 1048576) / Math.max(1, large.orders - small.orders), 0)} bytes/record)`,
    );
  }
}

function printProfile(file, name) {
  let summary;
  try {
    summary = summarise(file, 12);
  } catch (error) {
    console.log(`\n${name}: no profile (${error.message})`);
    return;
  }
  console.log(`\n${name}: busy ${summary.busyMs} ms of CPU over the whole process lifetime`);
  console.log('  self time by package:');
  for (const row of summary.areas)
    console.log(
      `    ${String(row.percent).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.what}`,
    );
  console.log('  top functions by self time:');
  for (const row of summary.functions)
    console.log(
      `    ${String(row.percent).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.what}`,
    );
  console.log('  own functions by total time (self + callees):');
  for (const row of summary.own)
    console.log(
      `    ${String(row.percent).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.what}`,
    );
}
