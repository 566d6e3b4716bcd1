import { afterEach, expect, inject, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { createLogger } from '../../src/log.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { killNode, nodeByPort, restoreCluster } from '../support/rabbit-cluster.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

/**
 * The events consumer given all three nodes; the node it consumes through (which also leads the
 * quorum delivery queue: the consumer declared it there) is killed while deliveries are in
 * flight. Every event must reach the webhook, and an event that comes twice comes under the same
 * `webhook-id` (its receiver de-duplicates on it).
 */
const cluster = inject('rabbitCluster');
const EVENTS = 60;
const open = closedAfterEach();
afterEach(() => restoreCluster(cluster));

it('the consumer’s node killed mid-delivery: every event delivered, duplicates only under the same webhook-id', async () => {
  const receiver = await startWebhookReceiver([testSecret(27)]);
  open.push(receiver);
  receiver.setBehaviour(() => 'hang');
  const lines: string[] = [];
  const events = testEventsConfig({ deliveryTimeoutMs: 30_000 }); // quorum queues: the default
  let survivor = cluster.nodes[0]!;
  const harness = await startEventsHarness({
    events,
    url: cluster.nodes.map((n) => n.url),
    inspectUrl: () => survivor.url,
    env: { S: testSecret(27) },
    tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'S')] }],
    log: createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(line) },
    }),
  });
  open.push(harness);
  const consuming = lines
    .map((line) => JSON.parse(line) as { msg: string; node?: string })
    .find((line) => line.msg === 'events: consuming');
  expect(consuming?.node).toMatch(/^127\.0\.0\.1:\d+$/);
  const consumerNode = nodeByPort(cluster, consuming!.node!);
  survivor = cluster.nodes.find((n) => n !== consumerNode)!;

  const emitted = new Map<string, number>(); // event id → n
  for (let n = 0; n < EVENTS; n++) {
    const { id } = await emitEvent({
      url: survivor.url,
      events,
      businessId: 'ACME',
      type: 'sales-order.shipped',
      data: { n },
    });
    emitted.set(id, n);
  }
  await expect.poll(() => receiver.held, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);

  const killedAt = performance.now();
  await killNode(consumerNode);
  // The deliveries in flight succeed now, but their acks die with the node: they come again.
  receiver.setBehaviour(() => 200);
  receiver.release(200);
  try {
    await expect
      .poll(() => new Set(receiver.received.map((r) => r.id)).size, {
        timeout: 90_000,
        interval: 50,
      })
      .toBe(EVENTS);
  } catch (error) {
    // What the consumer said is the first thing to read when this fails.
    console.log(`[fleet] events consumer log:\n${lines.join('')}`);
    throw error;
  }
  const allIn = performance.now() - killedAt;

  expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(emitted.keys()));
  // Each event under exactly one webhook-id, and that id is the event's.
  for (const r of receiver.received)
    expect(emitted.get(r.id)).toBe((r.body.data as { n: number }).n);
  expect(receiver.received.every((r) => r.verifiedWith.length === 1)).toBe(true);
  const log = lines.join('');
  expect(log).toContain(`"node":"${consuming!.node}"`);
  expect(log).not.toContain('guest:guest');
  await expect.poll(() => harness.deadCount()).toBe(0);
  console.log(
    `[fleet] events: ${EVENTS} events, consumer's node ${consumerNode.id} killed with 2+ deliveries in flight; all delivered ${(allIn / 1000).toFixed(2)} s after the kill; ` +
      `${receiver.received.length} POSTs (${receiver.received.length - EVENTS} duplicates, each under its event's webhook-id)`,
  );
});
