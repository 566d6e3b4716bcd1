import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const open = closedAfterEach();

it("a business whose endpoint hangs does not delay another business's events", async () => {
  const slow = await startWebhookReceiver([testSecret(3)]);
  const fast = await startWebhookReceiver([testSecret(4)]);
  open.push(slow, fast);
  slow.setBehaviour(() => 'hang');
  // Prefetch well below the slow business's backlog: without lanes and parking, its events
  // alone would fill every slot and the fast business would wait for the timeout.
  const events = testEventsConfig({
    prefetch: 8,
    concurrencyPerEndpoint: 2,
    deliveryTimeoutMs: 20_000,
  });
  const harness = await startEventsHarness({
    events,
    env: { SLOW: testSecret(3), FAST: testSecret(4) },
    tenants: [
      { businessId: 'SLOW', webhooks: [webhook(slow.url, 'SLOW')] },
      { businessId: 'FAST', webhooks: [webhook(fast.url, 'FAST')] },
    ],
  });
  open.push(harness);
  const emit = (businessId: string) =>
    emitEvent({ url: AMQP_URL, events, businessId, type: 'sales-order.shipped', data: {} });

  for (let i = 0; i < 20; i++) await emit('SLOW');
  await expect.poll(() => slow.held).toBe(2);
  const started = performance.now();
  const { id } = await emit('FAST');
  await expect.poll(() => fast.received.map((r) => r.id)).toEqual([id]);
  const waitedMs = Math.round(performance.now() - started);
  // Still stuck: the fast delivery did not wait for the slow endpoint's answers or timeouts.
  expect(slow.held).toBe(2);
  console.info(`isolation: FAST delivered ${waitedMs} ms after emit while SLOW held 2 requests`);
  expect(
    await harness.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total'),
  ).toMatch(/outcome="deferred",business="SLOW"} \d+/);
  slow.setBehaviour(() => 200);
  slow.release(200);
});
