// npm run bench -- --only=cluster: what replication costs. A three-node RabbitMQ cluster of the
// bench's own (test/support/rabbit-cluster.ts: AMQP 5691–5693, distribution 25691–25693, its own
// folders, so a fleet test run on 5681–5683 never clashes) takes the service's 100-record batches
// (12 connections) into 1 quorum queue and into 2 and 4 quorum shards (broker.queues[].shards,
// leaders placed on different nodes); the machine's own node (AMQP_URL, 5672) takes the same into
// 1 classic and 1 quorum queue, in the same run. Each setting runs BENCH_ROUNDS times, the settings
// alternated, a fresh service and fresh queues each time, 2 s of warm-up before every measured run.
// Broker CPU: the beam.smp processes' CPU time over the run (/proc/<pid>/stat), the three nodes
// summed for the cluster. About 3 minutes with the defaults (the cluster takes 20–40 s to start).
// The three nodes share the machine's cores with the client and the service: the figures show
// replication's cost on one machine, not a real cluster's throughput.
// Knobs: BENCH_CLUSTER_SECONDS (6), BENCH_ROUNDS (2), BENCH_CONNECTIONS (12).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { connect } from 'amqplib';
import { EXCHANGE, safeUrl } from './broker.mjs';
import { uptime } from './format.mjs';
import { load, round } from './load.mjs';
import { BUSINESS_ID, PATH, basicAuth, batches } from './payloads.mjs';
import { brokerPid, cpuMs, startService, stopAll } from './servers.mjs';

const SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 12);
const AMQP_PORTS = [5691, 5692, 5693];
const DIST_PORTS = [25691, 25692, 25693];
const BASE = 'warehouse-ingest.bench.cluster';
const execFileAsync = promisify(execFile);

const SETTINGS = [
  { where: 'node', type: 'classic', queues: 1 },
  { where: 'node', type: 'quorum', queues: 1 },
  { where: 'cluster', type: 'quorum', queues: 1 },
  { where: 'cluster', type: 'quorum', queues: 2 },
  { where: 'cluster', type: 'quorum', queues: 4 },
];
const label = (s) =>
  `${s.where === 'node' ? 'one node' : '3-node cluster'}, ${s.queues > 1 ? `${s.queues} ${s.type} shards` : `1 ${s.type} queue`}`;

/** Sum of the processes' CPU time in ms (null if any is unreadable). */
const cpuOf = (pids) => {
  let sum = 0;
  for (const pid of pids) {
    const ms = cpuMs(pid);
    if (ms === null) return null;
    sum += ms;
  }
  return sum;
};

export async function runClusterBench({ amqpUrl, resultsDir }) {
  // The cluster helpers are the fleet tests' own, TypeScript: loaded through tsx (a dev dependency).
  const { tsImport } = await import('tsx/esm/api');
  const support = await tsImport('../test/support/rabbit-cluster.ts', import.meta.url);
  console.log(
    `\nreplication: a three-node cluster on this machine (AMQP ${AMQP_PORTS.join(', ')}) next to the machine's node at ${safeUrl(amqpUrl)}; 100-record batches, ${CONNECTIONS} connections, ${SECONDS} s per run after 2 s of warm-up, ${ROUNDS} rounds alternated, fresh service and queues each run\n  ${uptime()}`,
  );
  const started = Date.now();
  const { cluster, seconds, teardown } = await support.startRabbitCluster({
    amqpPorts: AMQP_PORTS,
    distPorts: DIST_PORTS,
    label: 'bench',
  });
  const stopCluster = () => teardown().catch(() => {});
  process.once('exit', () => {
    // Last resort on an interrupted run: the nodes are detached VMs, they would outlive us.
    for (const node of cluster.nodes) {
      const pid = support.nodeOsPid(node);
      if (pid) process.kill(pid, 'SIGKILL');
    }
  });
  console.log(`  cluster up in ${seconds.toFixed(1)} s`);
  const clusterUrls = cluster.nodes.map((n) => n.url);
  const clusterPids = cluster.nodes.map((n) => support.nodeOsPid(n));
  const nodePid = brokerPid(Number(new URL(amqpUrl).port || 5672));
  const apiKey = randomBytes(24).toString('hex');
  const authorization = basicAuth(BUSINESS_ID, apiKey);
  const bodies = batches(64, 100);
  const brokers = {
    node: await admin(amqpUrl),
    cluster: await admin(clusterUrls[0]),
  };
  const results = [];
  try {
    for (let round_ = 1; round_ <= ROUNDS; round_++) {
      for (const setting of SETTINGS) {
        const r = await measure(setting, round_);
        results.push(r);
        console.log(
          `  ${label(setting).padEnd(34)} run ${round_}: ${r.recordsPerSecond} records/s, ${r.failed} failed, p99 ${r.p99Ms} ms; CPU broker ${r.brokerPct ?? '?'}% of a core (${r.brokerUsPerRecord ?? '?'} µs/record), service ${r.serverPct}%${r.leaders ? `; leaders ${r.leaders.join(' / ')}` : ''}; messages per queue ${r.spread.join(' / ')}`,
        );
        if (r.firstError) console.log(`    first error: ${r.firstError}`);
      }
      console.log(`  round ${round_} done; ${uptime()}`);
    }
    const summary = SETTINGS.map((s) => {
      const mine = results.filter(
        (r) => r.where === s.where && r.type === s.type && r.queues === s.queues,
      );
      const range = (key) => {
        const v = mine.map((r) => r[key]).filter((x) => typeof x === 'number');
        return v.length ? [Math.min(...v), Math.max(...v)] : null;
      };
      return {
        ...s,
        label: label(s),
        recordsPerSecond: range('recordsPerSecond'),
        brokerUsPerRecord: range('brokerUsPerRecord'),
        brokerPct: range('brokerPct'),
      };
    });
    const show = (r) => (r ? (r[0] === r[1] ? `${r[0]}` : `${r[0]}–${r[1]}`) : '-');
    console.log(
      `\n  ${'setting'.padEnd(34)}${'records/s'.padStart(14)}${'broker µs/record'.padStart(20)}${'broker % of a core'.padStart(22)}`,
    );
    for (const s of summary)
      console.log(
        `  ${s.label.padEnd(34)}${show(s.recordsPerSecond).padStart(14)}${show(s.brokerUsPerRecord).padStart(20)}${show(s.brokerPct).padStart(22)}`,
      );
    console.log(
      `  (ranges over ${ROUNDS} runs; the cluster's CPU is its three nodes' together; section took ${Math.round((Date.now() - started) / 1000)} s)`,
    );
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, 'cluster-latest.json');
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      uptime: uptime(),
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      clusterStartSeconds: round(seconds, 1),
    };
    writeFileSync(file, `${JSON.stringify({ ...meta, summary, results }, null, 2)}\n`);
    console.log(`written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await stopAll(3000);
    await brokers.node.close();
    await brokers.cluster.close();
    await stopCluster();
  }

  async function measure(setting, run) {
    const name = `${BASE}.${setting.where}-${setting.type}-${setting.queues}`;
    const sharded = setting.queues > 1;
    const queueNames = sharded
      ? Array.from({ length: setting.queues }, (_, i) => `${name}.${i}`)
      : [name];
    const broker = brokers[setting.where];
    const remove = async () => {
      for (const q of queueNames) await broker.run((ch) => ch.deleteQueue(q));
      if (sharded) await broker.run((ch) => ch.deleteExchange(`${name}.shards`));
    };
    await remove();
    const pids = setting.where === 'node' ? [nodePid] : clusterPids;
    const service = await startService({
      amqpUrl: setting.where === 'node' ? amqpUrl : clusterUrls.join(','),
      exchange: EXCHANGE,
      queue: name,
      businessId: BUSINESS_ID,
      apiKey,
      shards: sharded ? setting.queues : undefined,
      queueArguments: {
        'x-queue-type': setting.type,
        // Quorum leaders on different nodes (the default puts them all on the declaring client's node).
        ...(setting.where === 'cluster' ? { 'x-queue-leader-locator': 'balanced' } : {}),
      },
    });
    try {
      // `balanced` spreads new leaders, but may leave a node without one: rebalance puts them
      // on all three (4 shards: 2 + 1 + 1).
      if (setting.where === 'cluster' && sharded)
        await rebalance(support, cluster, name).catch((e) =>
          console.log(`    rebalance failed: ${e.message.split('\n')[0]}`),
        );
      const leaders =
        setting.where === 'cluster'
          ? await leadersOf(support, cluster, queueNames).catch((e) => [
              `? (${e.message.split('\n')[0]})`,
            ])
          : undefined;
      const go = (seconds) =>
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
      await go(2);
      for (const q of queueNames) await broker.run((ch) => ch.purgeQueue(q));
      const before = {
        server: cpuMs(service.child.pid),
        broker: pids.includes(undefined) ? null : cpuOf(pids),
      };
      const r = await go(SECONDS);
      const serverMs = cpuMs(service.child.pid) - before.server;
      const after = before.broker === null ? null : cpuOf(pids);
      const brokerMs = after === null ? null : after - before.broker;
      const spread = [];
      for (const q of queueNames)
        spread.push((await broker.run((ch) => ch.checkQueue(q)))?.messageCount ?? '?');
      return {
        ...setting,
        run,
        recordsPerSecond: r.recordsPerSecond,
        records: r.records,
        failed: r.non2xx + r.errors,
        p99Ms: r.latencyMs.p99,
        serverPct: Math.round((serverMs / (r.seconds * 1000)) * 100),
        brokerPct: brokerMs === null ? null : Math.round((brokerMs / (r.seconds * 1000)) * 100),
        brokerUsPerRecord:
          brokerMs === null || !r.records ? null : round((brokerMs * 1000) / r.records, 1),
        leaders,
        spread,
        firstError: r.firstError,
      };
    } finally {
      await stopAll(3000);
      await remove();
    }
  }
}

/** A channel for deleting, purging and counting, reopened after a 404 closes it. */
async function admin(url) {
  const connection = await connect(url);
  connection.on('error', () => {});
  let channel;
  const open = async () => {
    channel = await connection.createChannel();
    channel.on('error', () => {});
  };
  await open();
  return {
    async run(call) {
      try {
        return await call(channel);
      } catch {
        await open();
        return undefined;
      }
    },
    close: () => connection.close().catch(() => {}),
  };
}

/** Each queue's leader node (n1…n3), from `rabbitmqctl list_queues name leader`. */
async function leadersOf(support, cluster, queueNames) {
  const [first] = cluster.nodes;
  const out = await support.ctl(cluster, first, [
    'list_queues',
    '--quiet',
    '--formatter',
    'json',
    'name',
    'leader',
  ]);
  const rows = JSON.parse(out);
  return queueNames.map((q) => {
    const leader = rows.find((r) => r.name === q)?.leader;
    return cluster.nodes.find((n) => n.nodeName === leader)?.id ?? String(leader);
  });
}

/** `rabbitmq-queues rebalance quorum` for the queues of one setting: leaders spread over the nodes. */
async function rebalance(support, cluster, name) {
  const [first] = cluster.nodes;
  await execFileAsync(
    path.join(support.RABBIT_BIN, 'rabbitmq-queues'),
    [
      '-n',
      first.nodeName,
      'rebalance',
      'quorum',
      '--vhost-pattern',
      '^/$',
      '--queue-pattern',
      `^${name.replaceAll('.', '\\.')}\\.`,
    ],
    { env: support.nodeEnv(cluster, first), cwd: first.dir, timeout: 60_000 },
  );
}
