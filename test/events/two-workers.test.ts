import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const open = closedAfterEach();

const FAST = ['ALPHA', 'BRAVO', 'CHARLIE'];
const PER_BUSINESS = 30;

it('two workers on one queue: every event delivered at least once, duplicates with the same webhook-id, and a hanging business does not hold up the others', async () => {
  const receivers = new Map<string, WebhookReceiver>();
  const env: Record<string, string> = {};
  for (const [i, businessId] of [...FAST, 'HANG'].entries()) {
    const receiver = await startWebhookReceiver([testSecret(20 + i)]);
    open.push(receiver);
    receivers.set(businessId, receiver);
    env[businessId] = testSecret(20 + i);
  }
  const hang = receivers.get('HANG')!;
  hang.setBehaviour(() => 'hang');
  const events = testEventsConfig({
    prefetch: 8,
    concurrencyPerEndpoint: 2,
    deliveryTimeoutMs: 30_000,
  });
  const tenants = [...receivers].map(([businessId, receiver]) => ({
    businessId,
    webhooks: [webhook(receiver.url, businessId)],
  }));
  // Two consumers, each on its own connection, on the same delivery queue.
  const workers = [
    await startEventsHarness({ events, env, tenants }),
    await startEventsHarness({ events, env, tenants }),
  ];
  open.push(...workers);

  const emitted = new Map<string, string>(); // event id → business
  const emit = async (businessId: string, i: number) => {
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId,
      type: 'sales-order.shipped',
      data: { businessId, i },
    });
    emitted.set(id, businessId);
  };
  for (let i = 0; i < 10; i++) await emit('HANG', i);
  await expect.poll(() => hang.held).toBe(4); // two per worker: both lanes full
  const started = performance.now();
  for (let i = 0; i < PER_BUSINESS; i += 1) await Promise.all(FAST.map((b) => emit(b, i)));
  const emittedMs = Math.round(performance.now() - started);

  const fastIds = [...emitted].filter(([, b]) => b !== 'HANG').map(([id]) => id);
  const deliveredIds = (businesses: readonly string[]) =>
    new Set(businesses.flatMap((b) => receivers.get(b)!.received.map((r) => r.id)));
  await expect.poll(() => deliveredIds(FAST), { timeout: 30_000 }).toEqual(new Set(fastIds));
  const fastMs = Math.round(performance.now() - started);
  // Completion order, not time: every fast business's events are in while the hanging one's
  // first requests are still unanswered.
  expect(hang.held).toBe(4);
  expect(deliveredIds(['HANG']).size).toBeLessThan(10);

  const byWorker = await Promise.all(
    workers.map(async (w) =>
      [
        ...(
          await w.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total')
        ).matchAll(/outcome="delivered",business="(?:ALPHA|BRAVO|CHARLIE)"} (\d+)/g),
      ].reduce((sum, m) => sum + Number(m[1]), 0),
    ),
  );
  console.info(
    `two workers: ${fastIds.length} events of ${FAST.length} businesses emitted in ${emittedMs} ms, all delivered ${fastMs} ms after the first emit, by worker ${byWorker.join(' + ')}, while HANG held ${hang.held} requests`,
  );
  expect(byWorker.every((n) => n > 0)).toBe(true);

  hang.setBehaviour(() => 200);
  hang.release(200);
  await expect.poll(() => deliveredIds(['HANG']).size, { timeout: 30_000 }).toBe(10);

  // Nothing lost, nothing invented; a duplicate is the same event under the same webhook-id.
  for (const [businessId, receiver] of receivers)
    for (const got of receiver.received) {
      expect(emitted.get(got.id)).toBe(businessId);
      expect(got.body).toMatchObject({ businessId, data: { businessId } });
      expect(got.verifiedWith).toHaveLength(1);
    }
  expect(deliveredIds([...receivers.keys()])).toEqual(new Set(emitted.keys()));
  const duplicates =
    [...receivers.values()].reduce((n, r) => n + r.received.length, 0) - emitted.size;
  console.info(
    `two workers: ${emitted.size} events, ${duplicates} extra deliveries (retries of the held ones included)`,
  );
  for (const worker of workers) expect(await worker.deadCount()).toBe(0);
});
