import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const open = closedAfterEach();

it('backs off an endpoint failing continuously, then probes it and delivers everything once it answers', async () => {
  const receiver = await startWebhookReceiver([testSecret(7)]);
  open.push(receiver);
  receiver.setBehaviour(() => 500);
  const events = testEventsConfig({
    concurrencyPerEndpoint: 1,
    retrySchedule: [0, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
    circuit: { failures: 3, coolDownMs: 3000, maxCoolDownMs: 3000 },
  });
  const harness = await startEventsHarness({
    events,
    env: { ACME: testSecret(7) },
    tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME')] }],
  });
  open.push(harness);
  const metric = (name: string) => harness.registry.getSingleMetricAsString(name);
  const retrying = async () =>
    Number(
      /outcome="retrying",business="ACME"} (\d+)/.exec(
        await metric('warehouse_ingest_event_deliveries_total'),
      )?.[1] ?? 0,
    );
  const ids: string[] = [];
  for (let i = 0; i < 6; i++)
    ids.push(
      (
        await emitEvent({
          url: AMQP_URL,
          events,
          businessId: 'ACME',
          type: 'sales-order.shipped',
          data: { i },
        })
      ).id,
    );

  await expect
    .poll(() => metric('warehouse_ingest_event_endpoints'))
    .toContain('state="backed-off"} 1');
  // Every event has been through the retry queue at least twice by now, yet only the three
  // failures that opened the circuit reached the endpoint: backed off as a whole.
  await expect.poll(retrying, { timeout: 10_000 }).toBeGreaterThanOrEqual(12);
  expect(receiver.received).toHaveLength(3);

  receiver.setBehaviour(() => 200);
  await expect
    .poll(() => new Set(receiver.received.filter((_, i) => i >= 3).map((r) => r.id)), {
      timeout: 20_000,
    })
    .toEqual(new Set(ids));
  // One probe after the cool-down, then each event once: nothing was sent during the back-off.
  expect(receiver.received).toHaveLength(3 + ids.length);
  expect(await metric('warehouse_ingest_event_endpoints')).toContain('state="backed-off"} 0');
  expect(await harness.deadCount()).toBe(0);
});
