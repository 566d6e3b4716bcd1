import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterEach, expect, inject, it } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import { demoOrdersCsv, shipmentIdOf } from '../support/drop-harness.js';
import { type FleetService, startFleetService } from '../support/fleet-load.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { killNode, nodeByPort, restoreCluster } from '../support/rabbit-cluster.js';

/**
 * A large CSV dropped into a local drop of the service (given all three nodes), and the node the
 * service publishes through killed while the file's records are being published. The file must
 * end with one final receipt, every record in the queue, duplicates only under the same id.
 */
const cluster = inject('rabbitCluster');
const ORDERS = 100_000; // 200,000 CSV lines: two lines per order

let fleet: FleetService | undefined;
afterEach(async () => {
  await fleet?.service.stop();
  fleet = undefined;
  await restoreCluster(cluster);
});

function receiptsIn(drop: string): Array<{ folder: string; receipt: Receipt }> {
  const found: Array<{ folder: string; receipt: Receipt }> = [];
  for (const folder of ['processed', 'failed']) {
    const dir = path.join(drop, folder);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.receipt.json')))
      found.push({
        folder,
        receipt: JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as Receipt,
      });
  }
  return found;
}

it('a dropped 200k-line CSV while its node is killed: one final receipt, every record in the queue', async () => {
  let drop = '';
  fleet = await startFleetService(cluster, (dir) => {
    drop = path.join(dir, 'drop');
    mkdirSync(drop);
    return {
      'fleet.yaml': [
        'name: fleet-orders',
        'businessId: DEMO',
        'kind: sales-orders',
        'format: v1-csv',
        `source: { type: local, path: ${drop} }`,
        'readiness: { strategy: rename }',
        'schedule: { pollIntervalMs: 1000 }',
      ].join('\n'),
    };
  });
  const serviceNode = nodeByPort(cluster, await fleet.node());
  const survivor = cluster.nodes.find((n) => n !== serviceNode)!;

  const csv = demoOrdersCsv(`FLEET-${Date.now()}`, ORDERS);
  writeFileSync(path.join(drop, 'orders.csv.part'), csv);
  renameSync(path.join(drop, 'orders.csv.part'), path.join(drop, 'orders.csv'));

  // Kill the node once the file's records are on their way into the queue.
  const watcher = await connect(survivor.url);
  watcher.on('error', () => undefined);
  const channel = await watcher.createChannel();
  await expect
    .poll(async () => (await channel.checkQueue(fleet!.queue)).messageCount, {
      timeout: 120_000,
      interval: 50,
    })
    .toBeGreaterThan(ORDERS / 10);
  await watcher.close().catch(() => undefined);
  const killedAt = performance.now();
  await killNode(serviceNode);

  await expect
    .poll(() => receiptsIn(drop).length, { timeout: 240_000, interval: 200 })
    .toBeGreaterThan(0);
  const settledAfter = performance.now() - killedAt;
  const receipts = receiptsIn(drop);
  expect(receipts.map((r) => `${r.folder}:${r.receipt.outcome}`)).toEqual(['processed:accepted']);
  const messageIds = (receipts[0]!.receipt.response as { messageIds: string[] }).messageIds;
  expect(messageIds).toHaveLength(ORDERS);

  const audit = auditQueue(await drainQueue(survivor.url, fleet.queue, 240_000), shipmentIdOf);
  const missing = messageIds.filter((id) => !audit.bodyOf.has(id));
  console.log(
    `[fleet] drop: ${ORDERS} orders (${ORDERS * 2} CSV lines), the service's node ${serviceNode.id} killed mid-publish; ` +
      `receipt ${(settledAfter / 1000).toFixed(1)} s after the kill; in the queue ${audit.messages} ` +
      `(${audit.distinctIds} distinct ids, duplicates ${audit.duplicates}), missing ${missing.length}`,
  );
  expect(missing).toEqual([]);
  expect(audit.distinctIds).toBe(ORDERS);
  expect(audit.recordsUnderSeveralIds).toEqual([]);
  expect(audit.idsWithDifferentBodies).toEqual([]);
  // Still exactly one receipt, the file beside it.
  expect(receiptsIn(drop)).toHaveLength(1);
  expect(existsSync(path.join(drop, 'processed', 'orders.csv'))).toBe(true);
});
