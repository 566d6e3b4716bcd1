// npm run bench [-- --only=json|csv] [--profile[=latency]]
// --only=json: only this file's part (service vs baseline, v2 JSON batches); --only=csv: only the v1 CSV
// part (bench/csv.mjs: HTTP CSV and file drops at volume); --only=events: webhook deliveries
// (bench/events.mjs); no flag: all three, JSON first.
// The service (dist/cli.js serve) and a bare baseline (bench/baseline-server.mjs), measured in turn
// on the same broker with the same payloads. Prints figures, no thresholds; writes
// bench/results/latest.json. --profile instead runs one load (throughput by default) per server
// under --cpu-prof and prints where the CPU time goes (profiles kept in bench/results/profiles/).
// Knobs: AMQP_URL, BENCH_CONNECTIONS (12), BENCH_SECONDS (10), BENCH_LATENCY_SECONDS (5).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXCHANGE, QUEUE, openBroker, safeUrl } from './broker.mjs';
import { summarise } from './cpuprofile.mjs';
import { load, round } from './load.mjs';
import { BUSINESS_ID, PATH, basicAuth, batches } from './payloads.mjs';
import { cleanupCsv, runCsvBench } from './csv.mjs';
import {
  ROOT,
  brokerPid,
  cpuMs,
  killAllNow,
  machineBusyMs,
  peakRssMiB,
  startBaseline,
  startService,
  stopAll,
  stopServer,
} from './servers.mjs';

const AMQP_URL = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672';
const number = (name, fallback) => Number(process.env[name] ?? fallback);
const settings = {
  batchSize: 100,
  throughputConnections: number('BENCH_CONNECTIONS', 12),
  throughputSeconds: number('BENCH_SECONDS', 10),
  latencyConnections: 1,
  latencySeconds: number('BENCH_LATENCY_SECONDS', 5),
  warmupSeconds: 3,
  rounds: 2,
};
const RESULTS = path.join(ROOT, 'bench/results');
// --profile: CPU profile under the throughput load; --profile=latency: under the 1-record sequential load.
const profileArg = process.argv.find((a) => a === '--profile' || a.startsWith('--profile='));
const PROFILE = profileArg && (profileArg.split('=')[1] || 'throughput');
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
if (ONLY !== undefined && ONLY !== 'json' && ONLY !== 'csv' && ONLY !== 'events') {
  console.error(`bench: --only=${ONLY}: expected --only=json, --only=csv or --only=events`);
  process.exit(2);
}

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
    `warehouse-ingest bench — node ${process.version}, ${os.cpus().length} CPUs (load average ${os.loadavg()[0].toFixed(2)}), RabbitMQ ${broker.version} at ${safeUrl(AMQP_URL)}`,
  );
  console.log(
    `queue ${QUEUE} (${bounded || 'no policy: rabbitmqctl unavailable'}; purged before every run)`,
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
  for (const server of servers) {
    if (PROFILE !== 'throughput')
      await measure(server, (s) => latency(s, PROFILE ? settings.warmupSeconds : 1));
    if (PROFILE !== 'latency') await measure(server, (s) => throughput(s, settings.warmupSeconds));
  }

  if (PROFILE)
    return profile(servers, measure, PROFILE === 'latency' ? latency : throughput, profileDir);

  const runs = [];
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
  const peakRss = Object.fromEntries(servers.map((s) => [s.name, peakRssMiB(s.child.pid)]));
  await cleanup();

  const summary = summarize(runs, peakRss);
  printTable(runs, summary);
  mkdirSync(RESULTS, { recursive: true });
  const file = path.join(RESULTS, 'latest.json');
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    loadAverage1m: round(os.loadavg()[0], 2),
    rabbitmq: broker.version,
    broker: safeUrl(AMQP_URL),
    queueBound: bounded || 'purge only',
  };
  writeFileSync(file, `${JSON.stringify({ ...meta, settings, runs, summary }, null, 2)}\n`);
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

function summarize(runs, peakRss) {
  const of = (impl) => {
    const mine = runs.filter((r) => r.impl === impl);
    return {
      recordsPerSecond: Math.round(mean(mine.map((r) => r.throughput.recordsPerSecond))),
      latencyP50Ms: round(mean(mine.map((r) => r.latency.latencyMs.p50)), 2),
      latencyP90Ms: round(mean(mine.map((r) => r.latency.latencyMs.p90)), 2),
      latencyP99Ms: round(mean(mine.map((r) => r.latency.latencyMs.p99)), 2),
      serverUsPerRecord: round(mean(mine.map((r) => r.throughput.cpu.serverUsPerRecord)), 1),
      brokerUsPerRecord: round(mean(mine.map((r) => r.throughput.cpu.brokerUsPerRecord)), 1),
      non2xx: mine.reduce((n, r) => n + r.throughput.non2xx + r.latency.non2xx, 0),
      peakRssMiB: peakRss[impl],
    };
  };
  const service = of('service');
  const baseline = of('baseline');
  const ratio = (key) => round(service[key] / baseline[key], 2);
  return {
    service,
    baseline,
    ratio: {
      recordsPerSecond: ratio('recordsPerSecond'),
      latencyP50: ratio('latencyP50Ms'),
      latencyP99: ratio('latencyP99Ms'),
      serverCpu: ratio('serverUsPerRecord'),
      brokerCpu: ratio('brokerUsPerRecord'),
      peakRss: ratio('peakRssMiB'),
    },
  };
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
      'peak RSS MiB',
    ],
    [
      'service',
      s.recordsPerSecond,
      s.latencyP50Ms,
      s.latencyP99Ms,
      s.serverUsPerRecord,
      s.brokerUsPerRecord,
      s.peakRssMiB,
    ],
    [
      'baseline',
      b.recordsPerSecond,
      b.latencyP50Ms,
      b.latencyP99Ms,
      b.serverUsPerRecord,
      b.brokerUsPerRecord,
      b.peakRssMiB,
    ],
    [
      'service/baseline',
      ratio.recordsPerSecond,
      ratio.latencyP50,
      ratio.latencyP99,
      ratio.serverCpu,
      ratio.brokerCpu,
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
  if (ONLY === undefined || ONLY === 'json') await main();
  if (ONLY === undefined || ONLY === 'csv')
    await runCsvBench({ amqpUrl: AMQP_URL, profile: Boolean(PROFILE), resultsDir: RESULTS });
  // Webhook deliveries (bench/events.mjs): service consumer vs amqplib → undici baseline.
  if ((ONLY === undefined && !PROFILE) || ONLY === 'events')
    await (await import('./events.mjs')).runEventsBench({ amqpUrl: AMQP_URL });
}

selected()
  .catch(async (error) => {
    console.error(`bench: ${error?.message ?? error}`);
    await cleanup().catch(() => {});
    await cleanupCsv().catch(() => {});
    process.exitCode = 1;
  })
  .finally(() => process.exit());
