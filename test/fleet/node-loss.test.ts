import { afterEach, describe, expect, inject, it } from 'vitest';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import {
  acceptedMore,
  type FleetService,
  shipmentIdOf,
  startFleetService,
  startHttpLoad,
} from '../support/fleet-load.js';
import {
  type ClusterNode,
  ctl,
  killNode,
  nodeByPort,
  restoreCluster,
  stopApp,
} from '../support/rabbit-cluster.js';

/**
 * The service given all three nodes of a real cluster, under HTTP load (4 clients, 50-record
 * batches, each retried until 202), loses the node it is connected to — the node that also leads
 * the records queue, since a quorum queue's leader is placed on the node that declared it. Every
 * record answered 202 must be in the queue (drained through a surviving node), no batch may give
 * up, and the longest stretch without a 202 is printed (goal ≤ 10 s).
 */
const cluster = inject('rabbitCluster');
const CLIENTS = 4;
const RECORDS_PER_BATCH = 50;
const GOAL_GAP_MS = 10_000;
/** Batches answered 202 before the loss, and again after it, before the load stops (~10 s each here). */
const LOAD_BATCHES = 150;

let fleet: FleetService | undefined;
afterEach(async () => {
  await fleet?.service.stop();
  fleet = undefined;
  await restoreCluster(cluster);
});

async function loseConnectedNode(
  how: 'kill -9' | 'stop_app',
  lose: (node: ClusterNode) => Promise<void>,
) {
  fleet = await startFleetService(cluster);
  const before = nodeByPort(cluster, await fleet.node());
  const load = startHttpLoad(fleet.service, {
    clients: CLIENTS,
    recordsPerBatch: RECORDS_PER_BATCH,
    budgetMs: 150_000,
    tag: how === 'kill -9' ? 'KILL' : 'STOP',
  });
  const started = performance.now();
  await acceptedMore(load, LOAD_BATCHES);
  const lostAt = performance.now();
  await lose(before);
  const lostMs = performance.now() - lostAt;
  const acceptedAtLoss = load.client.stats.accepted;
  try {
    await acceptedMore(load, LOAD_BATCHES);
  } catch (error) {
    // The service's own account is what to read when it does not recover.
    const said = fleet.lines.filter((line) => line.includes('"component":"rabbitmq"'));
    const survivor = cluster.nodes.find((n) => n !== before)!;
    const queues = await ctl(cluster, survivor, [
      'list_queues',
      'name',
      'type',
      'leader',
      'members',
      'online',
    ]).catch((e: unknown) => String(e));
    const status = await ctl(cluster, survivor, ['cluster_status']).catch((e: unknown) =>
      String(e),
    );
    console.log(
      `[fleet] ${how}: no recovery; client ${JSON.stringify({ ...load.client.stats, acceptedAt: undefined, unavailableAt: undefined })}\n${said.slice(-30).join('')}\n${queues}\n${status}`,
    );
    throw error;
  }
  const after = nodeByPort(cluster, await fleet.node());
  await load.stop();
  const loadMs = performance.now() - started;
  const firstAfter = load.client.stats.acceptedAt
    .filter((t) => t > lostAt + lostMs)
    .sort((a, b) => a - b)[0];

  const survivor = cluster.nodes.find((n) => n !== before)!;
  const audit = auditQueue(await drainQueue(survivor.url, fleet.queue, 120_000), shipmentIdOf);
  const accepted = load.sent.filter((b) => b.messageIds);
  const acceptedRecords = accepted.reduce((sum, b) => sum + b.messageIds!.length, 0);
  const missing: string[] = [];
  for (const batch of accepted)
    batch.messageIds!.forEach((id, i) => {
      const body = audit.bodyOf.get(id);
      if (body === undefined || shipmentIdOf(body) !== batch.shipmentIds[i]) missing.push(id);
    });
  const gap = load.longestGapMs();
  const stats = load.client.stats;
  console.log(
    `[fleet] ${how} of ${before.id} (the service's node) under load: ${(loadMs / 1000).toFixed(1)} s of load, ` +
      `${stats.accepted} batches answered 202 (${acceptedRecords} records; ${acceptedAtLoss} batches before the loss), ` +
      `503s ${stats.unavailable}, no answer ${stats.networkErrors}, other 5xx ${stats.otherServerErrors}, retried batches ${stats.retriedBatches}; ` +
      `records lost ${missing.length}, in the queue ${audit.messages} (${audit.distinctIds} distinct ids, duplicates ${audit.duplicates}); ` +
      `longest stretch without a 202 ${(gap / 1000).toFixed(2)} s; first 202 ${firstAfter === undefined ? '?' : ((firstAfter - lostAt) / 1000).toFixed(2)} s after the loss began ` +
      `(the ${how} itself took ${(lostMs / 1000).toFixed(2)} s); now on ${after.id}`,
  );

  expect(after).not.toBe(before);
  expect(stats.otherServerErrors).toBe(0);
  // Every batch that was sent was answered 202 in the end (none gave up), one id per record.
  for (const batch of load.sent) expect(batch.messageIds).toHaveLength(RECORDS_PER_BATCH);
  expect(missing, 'records answered 202 but not in the queue').toEqual([]);
  expect(audit.distinctIds).toBe(acceptedRecords);
  expect(audit.recordsUnderSeveralIds).toEqual([]);
  expect(audit.idsWithDifferentBodies).toEqual([]);
  expect(gap, 'longest stretch without a 202 (ms)').toBeLessThanOrEqual(GOAL_GAP_MS);
  // The log names the nodes, never a password.
  const text = fleet.lines.join('');
  expect(text).toContain(`"node":"127.0.0.1:${before.port}"`);
  expect(text).not.toContain('guest:guest');
  expect(text).not.toContain('[unparseable url]');
}

describe('the service on a three-node cluster loses its node under HTTP load', () => {
  it('kill -9 of its node: every 202 is in the queue, no batch gives up', async () => {
    await loseConnectedNode('kill -9', killNode);
  });

  it('rabbitmqctl stop_app on its node: the same', async () => {
    await loseConnectedNode('stop_app', (node) => stopApp(cluster, node));
  });
});
