// npm run bench -- --only=shards: past one queue. The service (production mode, broker) takes
// 100-record batches (12 connections) into 1 plain queue, then into the same queue sharded over 2
// and 4 queues (broker.queues[].shards: a consistent-hash exchange on the message id), and — with
// BENCH_QUORUM=1, the default — into 1 quorum queue. Prints records/s, server and broker CPU, and
// how the records spread over the shards. One run per setting, a fresh service each; the queues
// are deleted after every run. Knobs: BENCH_QUEUE_COUNTS (1,2,4), BENCH_SHARD_SECONDS (6),
// BENCH_QUORUM (1), BENCH_CONNECTIONS (12).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect } from 'amqplib';
import { EXCHANGE, safeUrl } from './broker.mjs';
import { load, round } from './load.mjs';
import { BUSINESS_ID, PATH, basicAuth, batches } from './payloads.mjs';
import { brokerPid, cpuMs, startService, stopAll } from './servers.mjs';

const counts = (process.env.BENCH_QUEUE_COUNTS ?? '1,2,4')
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => Number.isInteger(n) && n >= 1 && n <= 64);
const SECONDS = Number(process.env.BENCH_SHARD_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 12);
const QUORUM = process.env.BENCH_QUORUM !== '0';
const BASE = 'warehouse-ingest.bench.shards';

export async function runShardsBench({ amqpUrl, resultsDir }) {
  const connection = await connect(amqpUrl);
  connection.on('error', () => {});
  let channel = await connection.createChannel();
  const fresh = async () => {
    channel = await connection.createChannel();
    channel.on('error', () => {});
  };
  channel.on('error', () => {});
  const apiKey = randomBytes(24).toString('hex');
  const authorization = basicAuth(BUSINESS_ID, apiKey);
  const bodies = batches(64, 100);
  const beam = brokerPid();
  const settings = [
    ...counts.map((n) => ({ queues: n, type: 'classic' })),
    ...(QUORUM ? [{ queues: 1, type: 'quorum' }] : []),
  ];
  console.log(
    `\npast one queue: 100-record batches, ${CONNECTIONS} connections, ${SECONDS} s per setting (after 2 s of warm-up), fresh service each, RabbitMQ at ${safeUrl(amqpUrl)}; load average ${os.loadavg()[0].toFixed(2)}`,
  );
  const results = [];
  try {
    for (const setting of settings) {
      const name = `${BASE}.${setting.type}-${setting.queues}`;
      const sharded = setting.queues > 1;
      const queueNames = sharded
        ? Array.from({ length: setting.queues }, (_, i) => `${name}.${i}`)
        : [name];
      const remove = async () => {
        for (const q of queueNames) await channel.deleteQueue(q).catch(fresh);
        if (sharded) await channel.deleteExchange(`${name}.shards`).catch(fresh);
      };
      await remove();
      const service = await startService({
        amqpUrl,
        exchange: EXCHANGE,
        queue: name,
        businessId: BUSINESS_ID,
        apiKey,
        shards: sharded ? setting.queues : undefined,
        // Spelled out: the service's queues are quorum unless told otherwise.
        queueArguments: { 'x-queue-type': setting.type },
      });
      try {
        const run = (seconds) =>
          load({
            url: service.url,
            path: PATH,
            authorization,
            bodies,
            recordsPerBody: 100,
            connections: CONNECTIONS,
            seconds,
            stopWhen: service.child.died,
          });
        await run(2);
        for (const q of queueNames) await channel.purgeQueue(q);
        const before = { server: cpuMs(service.child.pid), broker: beam ? cpuMs(beam) : null };
        const r = await run(SECONDS);
        const serverMs = cpuMs(service.child.pid) - before.server;
        const brokerMs = beam ? cpuMs(beam) - before.broker : null;
        const spread = [];
        for (const q of queueNames) spread.push((await channel.checkQueue(q)).messageCount);
        const result = {
          queues: setting.queues,
          type: setting.type,
          recordsPerSecond: r.recordsPerSecond,
          records: r.records,
          non2xx: r.non2xx + r.errors,
          p99Ms: r.latencyMs.p99,
          serverPct: Math.round((serverMs / (r.seconds * 1000)) * 100),
          serverUsPerRecord: r.records ? round((serverMs * 1000) / r.records, 1) : null,
          brokerPct: brokerMs === null ? null : Math.round((brokerMs / (r.seconds * 1000)) * 100),
          brokerUsPerRecord:
            brokerMs === null || !r.records ? null : round((brokerMs * 1000) / r.records, 1),
          spread,
          firstError: r.firstError,
        };
        results.push(result);
        console.log(
          `  ${String(setting.queues).padStart(2)} ${setting.type} queue${setting.queues > 1 ? 's' : ' '}: ${result.recordsPerSecond} records/s, ${result.non2xx} failed, p99 ${result.p99Ms} ms; CPU server ${result.serverPct}% (${result.serverUsPerRecord} µs/record), broker ${result.brokerPct ?? '?'}% (${result.brokerUsPerRecord ?? '?'} µs/record); messages per queue ${spread.join(' / ')}`,
        );
        if (result.firstError) console.log(`    first error: ${result.firstError}`);
      } finally {
        await stopAll(3000);
        await remove();
      }
    }
    const one = results.find((r) => r.queues === 1 && r.type === 'classic');
    if (one)
      for (const r of results.filter((x) => x !== one))
        console.log(
          `  ${r.queues} ${r.type} vs 1 classic: records/s ${one.recordsPerSecond ? `${round(r.recordsPerSecond / one.recordsPerSecond, 2)}×` : '-'}, broker µs/record ${r.brokerUsPerRecord && one.brokerUsPerRecord ? round(r.brokerUsPerRecord / one.brokerUsPerRecord, 2) : '-'}×`,
        );
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, 'shards-latest.json');
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      loadAverage1m: round(os.loadavg()[0], 2),
      seconds: SECONDS,
      connections: CONNECTIONS,
    };
    writeFileSync(file, `${JSON.stringify({ ...meta, results }, null, 2)}\n`);
    console.log(`written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await stopAll(3000);
    await connection.close().catch(() => {});
  }
}
