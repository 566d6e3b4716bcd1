// npm run bench -- --only=format: what each message property and header costs. The bare baseline
// (bench/baseline-server.mjs) takes 100-record batches (12 connections) into the bench's classic
// queue with a lean message (`messageId`, `contentType`, persistent, mandatory), then with each of
// the service's optional fields added alone, then with all of them; the service runs with its
// default format and with `broker.messageFormat: lean`. Every variant runs BENCH_ROUNDS times,
// alternated, after one warm-up; prints each run, the range and the mean against the lean
// baseline, and the target: the service's default format ≥ 0.9× the lean baseline.
// Knobs: BENCH_FORMAT_SECONDS (6), BENCH_ROUNDS (2), BENCH_CONNECTIONS (12).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXCHANGE, QUEUE, openBroker, safeUrl } from './broker.mjs';
import { load, round } from './load.mjs';
import { BUSINESS_ID, PATH, basicAuth, batches } from './payloads.mjs';
import { brokerPid, cpuMs, startBaseline, startService, stopAll } from './servers.mjs';
import { targetLine } from './targets.mjs';

const SECONDS = Number(process.env.BENCH_FORMAT_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 12);
/** The service's optional fields, in the order they are priced (baseline-server.mjs, FIELDS). */
const FIELDS = [
  'correlationId',
  'type',
  'timestamp',
  'business-id',
  'source',
  'source-name',
  'traceparent',
];

export const uptime = () => {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`;
  }
};

export async function runFormatBench({ amqpUrl, resultsDir }) {
  const broker = await openBroker(amqpUrl);
  const bounded = await broker.declare();
  const apiKey = randomBytes(24).toString('hex');
  const authorization = basicAuth(BUSINESS_ID, apiKey);
  const bodies = batches(64, 100);
  const beam = brokerPid();
  const baseline = (fields, name) =>
    startBaseline({
      amqpUrl,
      exchange: EXCHANGE,
      routingKey: `sales-orders.${BUSINESS_ID}`,
      businessId: BUSINESS_ID,
      authorization,
      path: PATH,
      fields,
      name,
    });
  const service = (messageFormat, name) =>
    startService({
      amqpUrl,
      exchange: EXCHANGE,
      queue: QUEUE,
      queueArguments: { 'x-queue-type': 'classic' }, // broker.mjs's queue, the baseline's too
      businessId: BUSINESS_ID,
      apiKey,
      messageFormat,
      name,
    });
  console.log(
    `\nmessage format: 100-record batches, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds alternated, classic queue ${QUEUE} (${bounded || 'purge only'}), RabbitMQ ${broker.version} at ${safeUrl(amqpUrl)}\n  ${uptime()}`,
  );
  try {
    const servers = [await baseline('none', 'lean')];
    for (const f of FIELDS) servers.push(await baseline(f, `+${f}`));
    servers.push(
      await baseline('all', 'full'),
      await service(undefined, 'service (default)'),
      await service('lean', 'service (lean)'),
    );
    const run = async (server, seconds) => {
      await broker.purge();
      const before = { server: cpuMs(server.child.pid), broker: beam ? cpuMs(beam) : null };
      const r = await load({
        url: server.url,
        path: PATH,
        authorization,
        bodies,
        recordsPerBody: 100,
        connections: CONNECTIONS,
        seconds,
        stopWhen: server.child.died,
      });
      const brokerMs = beam ? cpuMs(beam) - before.broker : null;
      return {
        recordsPerSecond: r.recordsPerSecond,
        failed: r.non2xx + r.errors,
        firstError: r.firstError,
        serverUsPerRecord: r.records
          ? round(((cpuMs(server.child.pid) - before.server) * 1000) / r.records, 1)
          : null,
        brokerUsPerRecord:
          brokerMs === null || !r.records ? null : round((brokerMs * 1000) / r.records, 1),
      };
    };
    for (const server of servers) await run(server, 2);
    const runs = new Map(servers.map((s) => [s.name, []]));
    for (let round_ = 1; round_ <= ROUNDS; round_++) {
      for (const server of servers) {
        const r = await run(server, SECONDS);
        runs.get(server.name).push(r);
        if (r.firstError)
          console.log(`  ${server.name} run ${round_}: first error ${r.firstError}`);
      }
      console.log(`  round ${round_} done; ${uptime()}`);
    }
    const mean = (list, key) => list.reduce((n, r) => n + (r[key] ?? 0), 0) / list.length;
    const lean = mean(runs.get('lean'), 'recordsPerSecond');
    const leanBroker = mean(runs.get('lean'), 'brokerUsPerRecord');
    console.log(
      `\n  ${'variant'.padEnd(20)}${'records/s (runs)'.padStart(26)}${'mean'.padStart(8)}${'× lean'.padStart(8)}${'broker µs/rec'.padStart(15)}${'server µs/rec'.padStart(15)}`,
    );
    const summary = {};
    for (const [name, list] of runs) {
      const rps = mean(list, 'recordsPerSecond');
      summary[name] = {
        recordsPerSecond: list.map((r) => r.recordsPerSecond),
        mean: Math.round(rps),
        vsLean: round(rps / lean, 2),
        brokerUsPerRecord: round(mean(list, 'brokerUsPerRecord'), 1),
        serverUsPerRecord: round(mean(list, 'serverUsPerRecord'), 1),
        failed: list.reduce((n, r) => n + r.failed, 0),
      };
      const s = summary[name];
      console.log(
        `  ${name.padEnd(20)}${s.recordsPerSecond.join(' / ').padStart(26)}${String(s.mean).padStart(8)}${String(s.vsLean).padStart(8)}${String(s.brokerUsPerRecord).padStart(15)}${String(s.serverUsPerRecord).padStart(15)}${s.failed ? `  ${s.failed} failed` : ''}`,
      );
    }
    const ratio = summary['service (default)'].vsLean;
    console.log(
      `  (broker µs/record of the lean baseline: ${round(leanBroker, 1)}; each "+field" adds that one field alone)`,
    );
    console.log('\ntargets (message format; the service / the lean baseline in this run):');
    console.log(
      targetLine('100-record batches, default format, records/s', ratio, { at: 0.9, most: false }),
    );
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, 'format-latest.json');
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      uptime: uptime(),
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
    };
    writeFileSync(file, `${JSON.stringify({ ...meta, summary, target: { ratio } }, null, 2)}\n`);
    console.log(`written to ${path.relative(process.cwd(), file)}`);
    return { ratio };
  } finally {
    await stopAll(3000);
    await broker.remove();
  }
}
