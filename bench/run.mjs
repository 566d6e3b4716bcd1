// npm run bench [-- --only=json|closed-loop|paced|sandbox|shards|format|cluster|csv|drops|mapped|events|pages|sign-in] [--profile[=latency]]
// --only=json: only this file's parts (service vs baseline, v2 JSON batches: throughput, sequential
// latency, paced open loop, sandbox); --only=closed-loop (throughput and sequential latency),
// --only=paced, --only=sandbox: one of those alone;
// --only=shards: 100-record batches into 1, 2 and 4 queues (bench/shards.mjs); --only=format: what
// each message property and header costs (bench/format.mjs); --only=cluster: a three-node cluster's
// quorum queues and shards next to this broker's classic and quorum queue (bench/cluster.mjs,
// about 3 minutes); --only=csv: the v1 CSV
// part (bench/csv.mjs: HTTP CSV and file drops at volume, the bare loop, the v2-JSON drop);
// --only=drops: the file drops, bare loop and JSON drop alone; --only=mapped: a 1M-line CSV
// through a JSONata mapping vs the v1-csv drop on the same content; --only=events: webhook deliveries
// (bench/events.mjs); --only=pages: the partner API's history reads at 100k batches
// (bench/history-pages.mjs); --only=sign-in: a cold API-key check during a flood of operator
// sign-ins (bench/sign-in-flood.mjs); no flag: all of them, JSON first.
// The service (dist/cli.js serve) and a bare baseline (bench/baseline-server.mjs), measured in turn
// on the same broker with the same payloads. Prints figures, no thresholds; writes
// bench/results/latest.json. --profile instead runs one load (throughput by default) per server
// under --cpu-prof and prints where the CPU time goes (profiles kept in bench/results/profiles/).
// Knobs: AMQP_URL, BENCH_CONNECTIONS (12), BENCH_SECONDS (10), BENCH_LATENCY_SECONDS (5),
// BENCH_PACED_RATE (400 requests/s), BENCH_PACED_SECONDS (8), BENCH_SANDBOX_SECONDS (5),
// BENCH_WARMUP_SECONDS (3: each load type, on each server, before it is measured), BENCH_ROUNDS (2:
// runs of each measured part per server, alternated; the figures are their means),
// BENCH_QUEUE_COUNTS (1,2,4), BENCH_SHARD_SECONDS (6), BENCH_QUORUM (1: also 1 quorum queue; 0: not),
// BENCH_FORMAT_SECONDS (6), BENCH_CLUSTER_SECONDS (6), BENCH_CLUSTER (1: the cluster in a full run; 0: not).
// The history: on (embedded, in each service's own temporary folder) by default, as the service's
// default is; INGEST_HISTORY__ENABLED=false measures it off, HISTORY_URL on PostgreSQL. Both pass
// to every service and drop child; run the settings in turns (docs/performance.md#history-on-against-off).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXCHANGE, QUEUE, openBroker, safeUrl } from './broker.mjs';
import { summarise } from './cpuprofile.mjs';
import { load, round } from './load.mjs';
import { paced } from './paced.mjs';
import { runShardsBench } from './shards.mjs';
import { runFormatBench } from './format.mjs';
import { printTargets } from './targets.mjs';
import { BUSINESS_ID, PATH, basicAuth, batches } from './payloads.mjs';
import { cleanupCsv, runCsvBench, runMappedBench } from './csv.mjs';
import {
  ROOT,
  RUNTIME_FLAGS,
  brokerPid,
  cpuMs,
  killAllNow,
  machineBusyMs,
  peakRssMiB,
  startBaseline,
  startService,
  stopAll,
  stopServer,
  threadCpuMs,
} from './servers.mjs';

const AMQP_URL = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672';
/** The service's history in this run, as the environment sets it (the service's default: on, embedded). */
const historySetting = () =>
  process.env.INGEST_HISTORY__ENABLED === 'false'
    ? 'off (INGEST_HISTORY__ENABLED=false)'
    : process.env.HISTORY_URL
      ? 'on, PostgreSQL (HISTORY_URL)'
      : 'on, embedded (the default)';
const number = (name, fallback) => Number(process.env[name] ?? fallback);
const settings = {
  batchSize: 100,
  throughputConnections: number('BENCH_CONNECTIONS', 12),
  throughputSeconds: number('BENCH_SECONDS', 10),
  latencyConnections: 1,
  latencySeconds: number('BENCH_LATENCY_SECONDS', 5),
  warmupSeconds: number('BENCH_WARMUP_SECONDS', 3),
  rounds: number('BENCH_ROUNDS', 2),
  pacedRate: number('BENCH_PACED_RATE', 400),
  pacedSeconds: number('BENCH_PACED_SECONDS', 8),
  sandboxSeconds: number('BENCH_SANDBOX_SECONDS', 5),
};
const RESULTS = path.join(ROOT, 'bench/results');
// --profile: CPU profile under the throughput load; --profile=latency: under the 1-record sequential load.
const profileArg = process.argv.find((a) => a === '--profile' || a.startsWith('--profile='));
const PROFILE = profileArg && (profileArg.split('=')[1] || 'throughput');
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const PARTS = [
  'json',
  'closed-loop',
  'paced',
  'sandbox',
  'shards',
  'format',
  'cluster',
  'csv',
  'drops',
  'mapped',
  'events',
  'pages',
  'sign-in',
];
if (ONLY !== undefined && !PARTS.includes(ONLY)) {
  console.error(
    `bench: --only=${ONLY}: expected one of ${PARTS.map((p) => `--only=${p}`).join(', ')}`,
  );
  process.exit(2);
}
/** Which parts of main() run: all of them for no flag or --only=json. */
const mainPart = (part) => ONLY === undefined || ONLY === 'json' || ONLY === part;

let broker;
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await stopAll(PROFILE ? 15_000 : 3000);
    await broker?.remove();
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`\nbench: ${signal}, stopping the servers`);
    Promise.all([cleanup(), cleanupCsv()]).finally(() => process.exit(130));
  });
}
process.on('exit', killAllNow);

const log = (line) => console.log(line);
const gc = () => globalThis.gc?.();

async function main() {
  broker = await openBroker(AMQP_URL);
  const bounded = await broker.declare();
  const apiKey = randomBytes(24).toString('hex');
  const authorization = basicAuth(BUSINESS_ID, apiKey);
  const big = batches(64, settings.batchSize);
  const small = batches(256, 1);
  const options = (server, bodies, recordsPerBody, connections, seconds) => ({
    url: server.url,
    path: PATH,
    authorization,
    bodies,
    recordsPerBody,
    connections,
    seconds,
    stopWhen: server.child.died,
  });
  const throughput = (server, seconds = settings.throughputSeconds) =>
    load(options(server, big, settings.batchSize, settings.throughputConnections, seconds));
  const latency = (server, seconds = settings.latencySeconds) =>
    load(options(server, small, 1, settings.latencyConnections, seconds));

  const profileDir = path.join(RESULTS, 'profiles');
  const nodeArgs = (name) =>
    PROFILE
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
  const service = await startService({
    amqpUrl: AMQP_URL,
    exchange: EXCHANGE,
    queue: QUEUE,
    businessId: BUSINESS_ID,
    apiKey,
    // The bench declares a classic queue (the baseline publishes to it as well); the service
    // declares quorum queues unless told, and would refuse the classic one in its way.
    queueArguments: { 'x-queue-type': 'classic' },
    nodeArgs: nodeArgs('service'),
  });
  const baseline = await startBaseline({
    amqpUrl: AMQP_URL,
    exchange: EXCHANGE,
    routingKey: `sales-orders.${BUSINESS_ID}`,
    businessId: BUSINESS_ID,
    authorization,
    path: PATH,
    nodeArgs: nodeArgs('baseline'),
  });
  const servers = [service, baseline];

  const bodyKiB = Math.round(big[0].length / 1024);
  console.log(
    `warehouse-ingest bench — node ${process.version}, ${os.cpus().length} CPUs (load average ${os.loadavg()[0].toFixed(2)}), RabbitMQ ${broker.version} at ${safeUrl(AMQP_URL)}; both servers run with npm start's node flags: ${RUNTIME_FLAGS.join(' ') || 'none'}`,
  );
  console.log(
    `queue ${QUEUE} (${bounded || 'no policy: rabbitmqctl unavailable'}; purged before every run); history ${historySetting()}`,
  );
  console.log(
    `throughput: ${settings.batchSize}-record batches (~${bodyKiB} KiB), ${settings.throughputConnections} keep-alive connections, ${settings.throughputSeconds} s per run` +
      ` | latency: 1-record batches, ${settings.latencyConnections} connection, ${settings.latencySeconds} s per run | warm-up ${settings.warmupSeconds} s each\n`,
  );

  const beam = brokerPid();
  const measure = async (server, what, run) => {
    await broker.purge();
    gc();
    const before = {
      server: cpuMs(server.child.pid),
      threads: threadCpuMs(server.child.pid),
      broker: cpuMs(beam),
      self: process.cpuUsage(),
      machine: machineBusyMs(),
    };
    const result = await what(server);
    result.cpu = cpuShares(result, before, server.child.pid, beam);
    if (server.child.exitCode !== null || server.child.signalCode !== null)
      throw new Error(await server.child.died);
    if (run) {
      const l = result.latencyMs;
      const c = result.cpu;
      log(
        `  ${server.name.padEnd(8)} run ${run}: ${result.ok} ok, ${result.non2xx} non-2xx, ${result.recordsPerSecond} records/s, p50 ${l.p50} / p99 ${l.p99} ms; CPU server ${c.serverPct}% (${c.serverUsPerRecord} µs/record), broker ${c.brokerPct ?? '?'}% (${c.brokerUsPerRecord ?? '?'} µs/record), autocannon ${c.loadgenPct}%, other ${c.otherPct ?? '?'}%`,
      );
      if (result.firstError) log(`    first error: ${result.firstError}`);
    }
    return result;
  };

  // Warm-up, sequential load first: its first request fills the service's credential cache, so
  // the concurrent load does not start with a dozen parallel scrypt checks (≈ +130 MiB of peak RSS).
  // A profile warms up with its own load only, so the two do not mix.
  // --only=sandbox measures other servers (sandboxPart): these two are not warmed up for nothing.
  for (const server of ONLY === 'sandbox' ? [] : servers) {
    if (PROFILE !== 'throughput') await measure(server, (s) => latency(s, settings.warmupSeconds));
    if (PROFILE !== 'latency') await measure(server, (s) => throughput(s, settings.warmupSeconds));
  }

  if (PROFILE)
    return profile(servers, measure, PROFILE === 'latency' ? latency : throughput, profileDir);

  const runs = [];
  const closedLoop = mainPart('closed-loop');
  if (closedLoop) {
    log('throughput');
    for (let run = 1; run <= settings.rounds; run++) {
      for (const server of servers)
        runs.push({ impl: server.name, run, throughput: await measure(server, throughput, run) });
    }
    log('latency');
    for (let run = 1; run <= settings.rounds; run++) {
      for (const server of servers)
        runs.find((r) => r.impl === server.name && r.run === run).latency = await measure(
          server,
          latency,
          run,
        );
    }
  }
  const pacedRuns = [];
  if (mainPart('paced')) {
    log(
      `paced (open loop): 1-record batches at ${settings.pacedRate}/s for ${settings.pacedSeconds} s, latency from the scheduled send time`,
    );
    const pacedLoad = (server) =>
      paced({
        ...options(server, small, 1, 0, settings.pacedSeconds),
        rate: settings.pacedRate,
      });
    for (let run = 1; run <= settings.rounds; run++) {
      for (const server of servers) {
        const r = await measure(server, pacedLoad);
        pacedRuns.push({ impl: server.name, run, ...r });
        log(
          `  ${server.name.padEnd(8)} run ${run}: ${r.ok}/${r.scheduled} ok, ${r.failed} failed, ${r.late} late (max send lag ${r.maxSendLagMs} ms); p50 ${r.latencyMs.p50} / p90 ${r.latencyMs.p90} / p99 ${r.latencyMs.p99} / max ${r.latencyMs.max} ms; CPU server ${r.cpu.serverUsPerRecord} µs/request, broker ${r.cpu.brokerPct ?? '?'}%, generator ${r.cpu.loadgenPct}% (${r.cpu.loadgenUsPerRecord} µs/request)`,
        );
        if (r.firstError) log(`    first error: ${r.firstError}`);
      }
    }
  }
  const peakRss = Object.fromEntries(servers.map((s) => [s.name, peakRssMiB(s.child.pid)]));
  await stopAll(3000);

  const sandboxRuns = mainPart('sandbox')
    ? await sandboxPart({ measure, options, small, apiKey, authorization })
    : [];
  await cleanup();

  const summary = summarize(runs, peakRss, pacedRuns, sandboxRuns);
  if (closedLoop) printTable(runs, summary);
  printSideParts(summary);
  printTargets(summary);
  mkdirSync(RESULTS, { recursive: true });
  // A part run alone does not overwrite the full run's figures.
  const file = path.join(RESULTS, ONLY && ONLY !== 'json' ? `latest-${ONLY}.json` : 'latest.json');
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    loadAverage1m: round(os.loadavg()[0], 2),
    rabbitmq: broker.version,
    broker: safeUrl(AMQP_URL),
    queueBound: bounded || 'purge only',
  };
  writeFileSync(
    file,
    `${JSON.stringify({ ...meta, settings, runs, pacedRuns, sandboxRuns, summary }, null, 2)}\n`,
  );
  console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
}

/**
 * CPU used during a run, as % of one core and as µs per record: the server, the broker, this
 * process (autocannon) and everything else on the machine ("other": noise from other work).
 */
function cpuShares(result, before, pid, beam) {
  const ms = {
    server: cpuMs(pid) - before.server,
    broker: beam ? cpuMs(beam) - before.broker : null,
  };
  const self = process.cpuUsage(before.self);
  ms.loadgen = (self.user + self.system) / 1000;
  const share = {};
  for (const [who, used] of Object.entries(ms)) {
    share[`${who}Pct`] = used === null ? null : Math.round((used / (result.seconds * 1000)) * 100);
    share[`${who}UsPerRecord`] =
      used === null || !result.records ? null : round((used * 1000) / result.records, 1);
  }
  // Where the server's CPU went: its main thread (user, system) and its other threads.
  const threads = threadCpuMs(pid);
  if (before.threads && threads && result.records) {
    const per = (key) => round(((threads[key] - before.threads[key]) * 1000) / result.records, 1);
    share.threadsUsPerRecord = {
      mainUser: per('mainUser'),
      mainSystem: per('mainSystem'),
      others: per('others'),
    };
  }
  const machine = machineBusyMs() - before.machine;
  share.otherPct =
    ms.broker === null
      ? null
      : Math.max(
          0,
          Math.round(
            ((machine - ms.server - ms.broker - ms.loadgen) / (result.seconds * 1000)) * 100,
          ),
        );
  return share;
}

function mean(values) {
  const present = values.filter((v) => typeof v === 'number');
  return present.length ? present.reduce((a, b) => a + b, 0) / present.length : null;
}

function summarize(runs, peakRss, pacedRuns, sandboxRuns) {
  const of = (impl) => {
    const mine = runs.filter((r) => r.impl === impl);
    const paced = pacedRuns.filter((r) => r.impl === impl);
    const sandbox = sandboxRuns.filter((r) => r.impl === impl);
    const avg = (list, pick, digits = 1) => {
      const m = mean(list.map(pick));
      return m === null ? null : round(m, digits);
    };
    return {
      recordsPerSecond: avg(mine, (r) => r.throughput.recordsPerSecond, 0),
      latencyP50Ms: avg(mine, (r) => r.latency.latencyMs.p50, 2),
      latencyP90Ms: avg(mine, (r) => r.latency.latencyMs.p90, 2),
      latencyP99Ms: avg(mine, (r) => r.latency.latencyMs.p99, 2),
      serverUsPerRecord: avg(mine, (r) => r.throughput.cpu.serverUsPerRecord),
      brokerUsPerRecord: avg(mine, (r) => r.throughput.cpu.brokerUsPerRecord),
      // 1-record batches: one record per request, so µs per record is µs per request.
      serverUsPerRequest: avg(mine, (r) => r.latency.cpu.serverUsPerRecord),
      threadsUsPerRequest: mine.every((r) => r.latency.cpu.threadsUsPerRecord)
        ? {
            mainUser: avg(mine, (r) => r.latency.cpu.threadsUsPerRecord.mainUser),
            mainSystem: avg(mine, (r) => r.latency.cpu.threadsUsPerRecord.mainSystem),
            others: avg(mine, (r) => r.latency.cpu.threadsUsPerRecord.others),
          }
        : null,
      non2xx: mine.reduce((n, r) => n + r.throughput.non2xx + r.latency.non2xx, 0),
      peakRssMiB: peakRss[impl],
      paced: paced.length
        ? {
            rate: paced[0].rate,
            p50Ms: avg(paced, (r) => r.latencyMs.p50, 2),
            p90Ms: avg(paced, (r) => r.latencyMs.p90, 2),
            p99Ms: avg(paced, (r) => r.latencyMs.p99, 2),
            maxMs: avg(paced, (r) => r.latencyMs.max, 2),
            late: paced.reduce((n, r) => n + r.late, 0),
            failed: paced.reduce((n, r) => n + r.failed, 0),
            serverUsPerRequest: avg(paced, (r) => r.cpu.serverUsPerRecord),
            generatorPct: avg(paced, (r) => r.cpu.loadgenPct, 0),
          }
        : null,
      sandbox: sandbox.length
        ? {
            requestsPerSecond: avg(sandbox, (r) => r.recordsPerSecond, 0),
            serverUsPerRequest: avg(sandbox, (r) => r.cpu.serverUsPerRecord),
            non2xx: sandbox.reduce((n, r) => n + r.non2xx + r.errors, 0),
          }
        : null,
    };
  };
  const service = of('service');
  const baseline = of('baseline');
  // Sandbox only, for information: the baseline with the service's per-request guarantees.
  const guaranteed = of('baseline+').sandbox;
  const ratio = (pick, base = baseline) => {
    const a = pick(service);
    const b = pick(base);
    return typeof a === 'number' && typeof b === 'number' && b ? round(a / b, 2) : null;
  };
  return {
    service,
    baseline,
    baselineWithGuarantees: guaranteed ? { sandbox: guaranteed } : null,
    ratio: {
      sandboxVsGuaranteesRequestsPerSecond: guaranteed
        ? ratio((x) => x.sandbox?.requestsPerSecond, { sandbox: guaranteed })
        : null,
      sandboxVsGuaranteesCpuPerRequest: guaranteed
        ? ratio((x) => x.sandbox?.serverUsPerRequest, { sandbox: guaranteed })
        : null,
      recordsPerSecond: ratio((x) => x.recordsPerSecond),
      latencyP50: ratio((x) => x.latencyP50Ms),
      latencyP99: ratio((x) => x.latencyP99Ms),
      serverCpu: ratio((x) => x.serverUsPerRecord),
      brokerCpu: ratio((x) => x.brokerUsPerRecord),
      serverCpuPerRequest: ratio((x) => x.serverUsPerRequest),
      peakRss: ratio((x) => x.peakRssMiB),
      pacedP50: ratio((x) => x.paced?.p50Ms),
      pacedP99: ratio((x) => x.paced?.p99Ms),
      pacedServerCpuPerRequest: ratio((x) => x.paced?.serverUsPerRequest),
      sandboxRequestsPerSecond: ratio((x) => x.sandbox?.requestsPerSecond),
      sandboxServerCpuPerRequest: ratio((x) => x.sandbox?.serverUsPerRequest),
    },
  };
}

/**
 * Sandbox (no broker) vs the baseline with PUBLISH=0: 1-record batches, closed loop, with the
 * throughput part's connection count. Fresh servers, so the broker-backed pair is stopped first.
 */
async function sandboxPart({ measure, options, small, apiKey, authorization }) {
  log(
    `sandbox: 1-record batches, ${settings.throughputConnections} connections, ${settings.sandboxSeconds} s per run; service INGEST_ENV=sandbox vs baseline PUBLISH=0 (no broker on either side); baseline+ = PUBLISH=0 GUARANTEES=1, for information`,
  );
  const servers = [
    await startService({
      amqpUrl: AMQP_URL,
      exchange: EXCHANGE,
      queue: QUEUE,
      businessId: BUSINESS_ID,
      apiKey,
      environment: 'sandbox',
    }),
    await startBaseline({ businessId: BUSINESS_ID, authorization, path: PATH, publish: false }),
    // For information, not a target: what the guarantees alone cost (see baseline-server.mjs).
    await startBaseline({
      businessId: BUSINESS_ID,
      authorization,
      path: PATH,
      publish: false,
      guarantees: true,
      name: 'baseline+',
    }),
  ];
  const closed = (seconds) => (server) =>
    load(options(server, small, 1, settings.throughputConnections, seconds));
  for (const server of servers) await measure(server, closed(settings.warmupSeconds));
  const runs = [];
  for (let run = 1; run <= settings.rounds; run++) {
    for (const server of servers) {
      const r = await measure(server, closed(settings.sandboxSeconds));
      runs.push({ impl: server.name, run, ...r });
      log(
        `  ${server.name.padEnd(9)} run ${run}: ${r.recordsPerSecond} requests/s, ${r.non2xx + r.errors} failed, p50 ${r.latencyMs.p50} / p99 ${r.latencyMs.p99} ms; CPU server ${r.cpu.serverPct}% (${r.cpu.serverUsPerRecord} µs/request), load generator ${r.cpu.loadgenPct}%, other ${r.cpu.otherPct ?? '?'}%`,
      );
      if (r.firstError) log(`    first error: ${r.firstError}`);
    }
  }
  await stopAll(3000);
  return runs;
}

function printSideParts(summary) {
  const { service: s, baseline: b, ratio } = summary;
  const row = (label, sv, bv, r) =>
    console.log(
      `  ${label.padEnd(44)}${String(sv ?? '-').padStart(10)}${String(bv ?? '-').padStart(10)}${String(r ?? '-').padStart(8)}`,
    );
  if (s.paced || s.sandbox)
    console.log(`
  ${''.padEnd(44)}${'service'.padStart(10)}${'baseline'.padStart(10)}${'ratio'.padStart(8)}`);
  if (s.paced) {
    row(`paced ${s.paced.rate}/s, 1-record: p50 ms`, s.paced.p50Ms, b.paced?.p50Ms, ratio.pacedP50);
    row('  p90 ms', s.paced.p90Ms, b.paced?.p90Ms, null);
    row('  p99 ms', s.paced.p99Ms, b.paced?.p99Ms, ratio.pacedP99);
    row('  max ms', s.paced.maxMs, b.paced?.maxMs, null);
    row(
      '  late / failed',
      `${s.paced.late}/${s.paced.failed}`,
      `${b.paced?.late}/${b.paced?.failed}`,
      null,
    );
    row(
      '  server µs/request',
      s.paced.serverUsPerRequest,
      b.paced?.serverUsPerRequest,
      ratio.pacedServerCpuPerRequest,
    );
    row('  generator CPU % of a core', s.paced.generatorPct, b.paced?.generatorPct, null);
  }
  if (s.sandbox) {
    row(
      'sandbox vs PUBLISH=0, 1-record: requests/s',
      s.sandbox.requestsPerSecond,
      b.sandbox?.requestsPerSecond,
      ratio.sandboxRequestsPerSecond,
    );
    row(
      '  server µs/request',
      s.sandbox.serverUsPerRequest,
      b.sandbox?.serverUsPerRequest,
      ratio.sandboxServerCpuPerRequest,
    );
    const g = summary.baselineWithGuarantees?.sandbox;
    if (g) {
      // Not a target: how much of the gap the guarantees alone explain (baseline-server.mjs, GUARANTEES=1).
      row(
        'sandbox vs baseline+guarantees: requests/s',
        s.sandbox.requestsPerSecond,
        g.requestsPerSecond,
        ratio.sandboxVsGuaranteesRequestsPerSecond,
      );
      row(
        '  server µs/request',
        s.sandbox.serverUsPerRequest,
        g.serverUsPerRequest,
        ratio.sandboxVsGuaranteesCpuPerRequest,
      );
    }
  }
}

function printTable(runs, summary) {
  const cols = [
    ['impl', (r) => r.impl],
    ['run', (r) => r.run],
    ['records/s', (r) => r.throughput.recordsPerSecond],
    ['non-2xx', (r) => r.throughput.non2xx + r.throughput.errors],
    ['p50 ms', (r) => r.throughput.latencyMs.p50],
    ['p99 ms', (r) => r.throughput.latencyMs.p99],
    ['srv µs/rec', (r) => r.throughput.cpu.serverUsPerRecord],
    ['mq µs/rec', (r) => r.throughput.cpu.brokerUsPerRecord],
    ['other %', (r) => r.throughput.cpu.otherPct],
    ['p50 ms', (r) => r.latency.latencyMs.p50],
    ['p90 ms', (r) => r.latency.latencyMs.p90],
    ['p99 ms', (r) => r.latency.latencyMs.p99],
    ['non-2xx', (r) => r.latency.non2xx + r.latency.errors],
  ];
  const width = (i) =>
    Math.max(cols[i][0].length, ...runs.map((r) => String(cols[i][1](r) ?? '-').length));
  const cell = (value, i) => String(value ?? '-')[i === 0 ? 'padEnd' : 'padStart'](width(i));
  const throughputWidth = cols.slice(0, 9).reduce((n, _, i) => n + width(i) + 2, 0);
  console.log(
    `\n${'throughput: 100-record batches; CPU per record, other load'.padStart(throughputWidth - 2)}  latency: sequential 1-record batches`,
  );
  console.log(cols.map((c, i) => cell(c[0], i)).join('  '));
  for (const r of runs) console.log(cols.map((c, i) => cell(c[1](r), i)).join('  '));

  const { service: s, baseline: b, ratio } = summary;
  const rows = [
    [
      'mean of runs',
      'records/s',
      '1-record p50 ms',
      'p99 ms',
      'server µs/record',
      'broker µs/record',
      'srv µs/1-rec req',
      'peak RSS MiB',
    ],
    [
      'service',
      s.recordsPerSecond,
      s.latencyP50Ms,
      s.latencyP99Ms,
      s.serverUsPerRecord,
      s.brokerUsPerRecord,
      s.serverUsPerRequest,
      s.peakRssMiB,
    ],
    [
      'baseline',
      b.recordsPerSecond,
      b.latencyP50Ms,
      b.latencyP99Ms,
      b.serverUsPerRecord,
      b.brokerUsPerRecord,
      b.serverUsPerRequest,
      b.peakRssMiB,
    ],
    [
      'service/baseline',
      ratio.recordsPerSecond,
      ratio.latencyP50,
      ratio.latencyP99,
      ratio.serverCpu,
      ratio.brokerCpu,
      ratio.serverCpuPerRequest,
      ratio.peakRss,
    ],
  ];
  console.log('');
  for (const row of rows)
    console.log(
      row
        .map((v, i) =>
          String(v ?? '-')[i === 0 ? 'padEnd' : 'padStart'](i === 0 ? 16 : rows[0][i].length),
        )
        .join('  '),
    );
  if (s.threadsUsPerRequest && b.threadsUsPerRequest) {
    console.log(
      '\n1-record requests, server CPU by thread (µs a request): main thread user + system, other threads (GC helpers, libuv pool)',
    );
    for (const [name, t] of [
      ['service', s.threadsUsPerRequest],
      ['baseline', b.threadsUsPerRequest],
    ])
      console.log(`  ${name.padEnd(9)} ${t.mainUser} + ${t.mainSystem}, ${t.others}`);
  }
  const failures = runs.flatMap((r) =>
    [r.throughput.firstError, r.latency.firstError]
      .filter(Boolean)
      .map((e) => `${r.impl} run ${r.run}: ${e}`),
  );
  if (failures.length) console.log(`\nfirst error: ${failures[0]}`);
}

async function profile(servers, measure, workload, dir) {
  for (const server of servers) {
    const result = await measure(server, workload, `profiled (${PROFILE})`);
    await stopServer(server.child, 15_000);
    const summary = summarise(path.join(dir, `${server.name}.cpuprofile`));
    console.log(
      `\n${server.name}: ${result.recordsPerSecond} records/s under --cpu-prof (${PROFILE} load); busy ${summary.busyMs} ms of CPU over the whole process lifetime`,
    );
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
  await cleanup();
  console.log(
    `\nprofiles in ${path.relative(process.cwd(), dir)} (open in Chrome DevTools → Performance)`,
  );
}

async function selected() {
  if (ONLY === undefined || ['json', 'closed-loop', 'paced', 'sandbox'].includes(ONLY))
    await main();
  if ((ONLY === undefined && !PROFILE) || ONLY === 'shards')
    await runShardsBench({ amqpUrl: AMQP_URL, resultsDir: RESULTS });
  if ((ONLY === undefined && !PROFILE) || ONLY === 'format')
    await runFormatBench({ amqpUrl: AMQP_URL, resultsDir: RESULTS });
  if ((ONLY === undefined && !PROFILE && process.env.BENCH_CLUSTER !== '0') || ONLY === 'cluster')
    await (await import('./cluster.mjs')).runClusterBench({
      amqpUrl: AMQP_URL,
      resultsDir: RESULTS,
    });
  if (ONLY === undefined || ONLY === 'csv' || ONLY === 'drops')
    await runCsvBench({
      amqpUrl: AMQP_URL,
      profile: Boolean(PROFILE),
      resultsDir: RESULTS,
      dropsOnly: ONLY === 'drops',
    });
  // A partner's own CSV through a JSONata mapping vs the v1-csv drop on the same file (bench/csv.mjs).
  if ((ONLY === undefined && !PROFILE) || ONLY === 'mapped')
    await runMappedBench({ amqpUrl: AMQP_URL, resultsDir: RESULTS });
  // Webhook deliveries (bench/events.mjs): service consumer vs amqplib → undici baseline.
  if ((ONLY === undefined && !PROFILE) || ONLY === 'events')
    await (await import('./events.mjs')).runEventsBench({ amqpUrl: AMQP_URL });
  // The partner API's (and the portal's) history reads at 100k batches (bench/history-pages.mjs).
  if ((ONLY === undefined && !PROFILE) || ONLY === 'pages')
    await (await import('./history-pages.mjs')).runPagesBench({ amqpUrl: AMQP_URL });
  // A cold API-key check during a flood of operator sign-ins (bench/sign-in-flood.mjs).
  if ((ONLY === undefined && !PROFILE) || ONLY === 'sign-in')
    await (await import('./sign-in-flood.mjs')).runSignInFloodBench();
}

selected()
  .catch(async (error) => {
    console.error(`bench: ${error?.message ?? error}`);
    await cleanup().catch(() => {});
    await cleanupCsv().catch(() => {});
    process.exitCode = 1;
  })
  .finally(() => process.exit());
