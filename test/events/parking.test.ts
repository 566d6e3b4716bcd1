import { connect } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { replayDeadLetters } from '../../src/cli/events/replay.js';
import { resolveEndpoints } from '../../src/events/subscriptions.js';
import { eventsTopology } from '../../src/events/topology.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

/** Hardening round 3, findings 4 and 6: a parked retry is never dropped without a trace. */
const SECRET = testSecret(4);
const env = { ACME_KEY: SECRET };
const open = closedAfterEach();

async function twoReceivers() {
  const before = await startWebhookReceiver([SECRET]);
  const after = await startWebhookReceiver([SECRET]);
  open.push(before, after);
  before.setBehaviour(() => 500);
  return { before, after };
}

const delivered = async (registry: { getSingleMetricAsString(name: string): Promise<string> }) =>
  /outcome="retrying",business="ACME"} 1/.test(
    await registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total'),
  );

describe('a webhook URL changed while retries wait on the broker', () => {
  it('with an endpoint id: the waiting retry goes to the new URL', async () => {
    const { before, after } = await twoReceivers();
    const events = testEventsConfig({ retrySchedule: [0, 1500] });
    const tenant = (url: string) => ({
      businessId: 'ACME',
      webhooks: [webhook(url, 'ACME_KEY', { id: 'main' })],
    });
    const harness = await startEventsHarness({ events, env, tenants: [tenant(before.url)] });
    open.push(harness);
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'ACME',
      type: 'a.b',
      data: {},
    });
    await expect.poll(() => delivered(harness.registry)).toBe(true);
    harness.consumer.setWebhooks(
      resolveEndpoints({ environment: 'development', tenants: [tenant(after.url)] }, env),
    );
    await expect.poll(() => after.received.map((r) => r.id), { timeout: 10_000 }).toEqual([id]);
    expect(await harness.deadCount()).toBe(0);
  });

  it('without one: the retry is dead-lettered endpoint-removed (never dropped), and replay sends it to the current endpoint', async () => {
    const { before, after } = await twoReceivers();
    const events = testEventsConfig({ retrySchedule: [0, 1500] });
    const tenant = (url: string) => ({ businessId: 'ACME', webhooks: [webhook(url, 'ACME_KEY')] });
    const harness = await startEventsHarness({ events, env, tenants: [tenant(before.url)] });
    open.push(harness);
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'ACME',
      type: 'a.b',
      data: {},
    });
    await expect.poll(() => delivered(harness.registry)).toBe(true);
    harness.consumer.setWebhooks(
      resolveEndpoints({ environment: 'development', tenants: [tenant(after.url)] }, env),
    );
    await expect.poll(() => harness.deadCount(), { timeout: 10_000 }).toBe(1);
    expect(after.received).toEqual([]);
    const { replayed } = await replayDeadLetters({ url: AMQP_URL, events, selection: { id } });
    expect(replayed.map((r) => r.reason)).toEqual(['endpoint-removed']);
    await expect.poll(() => after.received.map((r) => r.id), { timeout: 10_000 }).toEqual([id]);
  });
});

describe('a retry queue deleted under a running worker', () => {
  it('keeps the event (the parked copy is returned), declares the queue again and delivers it', async () => {
    const receiver = await startWebhookReceiver([SECRET]);
    open.push(receiver);
    receiver.setBehaviour((_, nth) => (nth < 3 ? 500 : 204));
    const events = testEventsConfig({ retrySchedule: [0, 300, 300] });
    const harness = await startEventsHarness({
      events,
      env,
      tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME_KEY')] }],
    });
    open.push(harness);
    const retryQueue = [...eventsTopology(events).retryQueues.values()][0]!;
    const connection = await connect(AMQP_URL);
    try {
      const channel = await connection.createChannel();
      await channel.deleteQueue(retryQueue);
    } finally {
      await connection.close();
    }
    // Published raw: \`events emit\` would declare the retry queue again.
    const id = 'evt-retry-queue-gone';
    await harness.publishRaw('a.b.ACME', Buffer.from('{}'), {
      persistent: true,
      messageId: id,
      type: 'a.b',
      headers: { 'business-id': 'ACME' },
    });
    await expect
      .poll(
        async () =>
          /outcome="delivered",business="ACME"} 1/.test(
            await harness.registry.getSingleMetricAsString(
              'warehouse_ingest_event_deliveries_total',
            ),
          ),
        { timeout: 15_000 },
      )
      .toBe(true);
    expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set([id]));
    expect(receiver.received.length).toBeGreaterThanOrEqual(3);
  });
});
