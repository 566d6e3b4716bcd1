import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const EVENTS = 6;
const open = closedAfterEach();

it('the broker connection cut mid-delivery: every event delivered at least once, duplicates share webhook-id', async () => {
  const { hostname, port } = new URL(AMQP_URL);
  const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  const receiver = await startWebhookReceiver([testSecret(8)]);
  open.push(proxy, receiver);
  receiver.setBehaviour(() => 'hang');
  const events = testEventsConfig({ deliveryTimeoutMs: 20_000 });
  const harness = await startEventsHarness({
    events,
    url: proxy.urlFor(AMQP_URL),
    env: { S: testSecret(8) },
    tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'S')] }],
  });
  open.push(harness);
  const ids: string[] = [];
  for (let i = 0; i < EVENTS; i++)
    ids.push(
      (
        await emitEvent({
          url: AMQP_URL,
          events,
          businessId: 'ACME',
          type: 'sales-order.shipped',
          data: {},
        })
      ).id,
    );
  await expect.poll(() => receiver.held).toBe(2);

  proxy.cut();
  // The two in flight now succeed, but their acks cannot reach the broker: they come again.
  receiver.setBehaviour(() => 200);
  receiver.release(200);
  await expect
    .poll(() => new Set(receiver.received.map((r) => r.id)).size, { timeout: 20_000 })
    .toBe(EVENTS);
  expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(ids));
  // It reconnects (the events already prefetched may all be delivered before it has).
  await expect.poll(() => proxy.accepted, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
  // None was given up on the way.
  await expect.poll(() => harness.deadCount()).toBe(0);
});
