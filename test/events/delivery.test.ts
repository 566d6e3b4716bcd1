import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import {
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const OLD = testSecret(1);
const NEW = testSecret(2);
const env = { ACME_OLD: OLD, ACME_NEW: NEW };

const open = closedAfterEach();

async function setUp(options: { schedule?: number[]; webhookExtra?: object } = {}) {
  const receiver = await startWebhookReceiver([OLD, NEW]);
  open.push(receiver);
  const events = testEventsConfig(options.schedule ? { retrySchedule: options.schedule } : {});
  const harness = await startEventsHarness({
    events,
    env,
    tenants: [
      {
        businessId: 'ACME',
        webhooks: [webhook(receiver.url, ['ACME_OLD', 'ACME_NEW'], options.webhookExtra)],
      },
    ],
  });
  open.push(harness);
  const emit = (type: string, data: Record<string, unknown> = {}, extra = {}) =>
    emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type, data, ...extra });
  return { receiver, harness, events, emit };
}

const header = (message: { properties: { headers?: Record<string, unknown> } }, name: string) =>
  message.properties.headers?.[name];

describe('webhook delivery (real RabbitMQ, real receiver verifying with standardwebhooks)', () => {
  it('delivers a signed event that both secrets of a rotation verify, with the documented body', async () => {
    const { receiver, emit } = await setUp();
    const { id } = await emit(
      'sales-order.shipped',
      { orderNumber: 'SO-1' },
      { correlationId: 'batch-7', messageIds: ['m-1', 'm-2'] },
    );
    await expect.poll(() => receiver.received.length).toBe(1);
    const [got] = receiver.received;
    expect(got?.id).toBe(id);
    expect(got?.verifiedWith).toEqual([OLD, NEW]);
    expect(got?.signature.split(' ')).toHaveLength(2);
    expect(got?.body).toEqual({
      type: 'sales-order.shipped',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      businessId: 'ACME',
      data: { orderNumber: 'SO-1' },
      correlationId: 'batch-7',
      messageIds: ['m-1', 'm-2'],
    });
  });

  it('retries a failing endpoint on the broker with the same webhook-id until it answers 2xx', async () => {
    const { receiver, harness, emit } = await setUp();
    receiver.setBehaviour((_, nth) => (nth < 3 ? 500 : 204));
    const { id } = await emit('purchase-order.received');
    await expect.poll(() => receiver.received.length).toBe(3);
    expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set([id]));
    expect(receiver.received.every((r) => r.verifiedWith.length === 2)).toBe(true);
    // The receiver records the third POST before its answer reaches the worker: wait for the count.
    const counted = () =>
      harness.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total');
    await expect.poll(counted).toContain('outcome="delivered",business="ACME"} 1');
    expect(await counted()).toContain('outcome="retrying",business="ACME"} 2');
    expect(await harness.deadLetters()).toEqual([]);
  });

  it('dead-letters after the last attempt, with attempts and last failure, and counts it', async () => {
    const { receiver, harness, emit } = await setUp();
    receiver.setBehaviour(() => 503);
    const { id } = await emit('work-order.completed');
    let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
    await expect
      .poll(async () => {
        dead = [...dead, ...(await harness.deadLetters())];
        return dead.length;
      })
      .toBe(1);
    expect(receiver.received).toHaveLength(3);
    const [letter] = dead;
    expect(letter?.properties.messageId).toBe(id);
    expect(header(letter!, 'x-dead-reason')).toBe('attempts-exhausted');
    expect(header(letter!, 'x-webhook-attempts')).toBe(3);
    expect(String(header(letter!, 'x-webhook-last-failure'))).toMatch(/^HTTP 503/);
    expect(JSON.parse(letter!.content.toString())).toEqual({});
    expect(
      await harness.registry.getSingleMetricAsString('warehouse_ingest_event_dead_letters_total'),
    ).toContain('reason="attempts-exhausted"} 1');
  });

  it('counts an endpoint that does not answer within the timeout as failed, then dead-letters', async () => {
    const { receiver, harness, emit } = await setUp({ schedule: [0, 50] });
    receiver.setBehaviour(() => 'hang');
    await emit('sales-order.shipped');
    let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
    await expect
      .poll(async () => (dead = [...dead, ...(await harness.deadLetters())]).length, {
        timeout: 15_000,
      })
      .toBe(1);
    expect(receiver.received).toHaveLength(2);
    expect(String(header(dead[0]!, 'x-webhook-last-failure'))).toBe('No answer within 1000 ms');
  });

  it('waits for an endpoint that answers slowly but within the timeout: delivered once, no retry', async () => {
    const { receiver, harness, emit } = await setUp();
    receiver.setBehaviour(() => 'hang');
    const { id } = await emit('sales-order.shipped');
    await expect.poll(() => receiver.held).toBe(1);
    receiver.release(202); // the answer comes while the attempt is still waiting
    await expect
      .poll(() =>
        harness.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total'),
      )
      .toContain('outcome="delivered",business="ACME"} 1');
    expect(receiver.received.map((r) => r.id)).toEqual([id]);
    expect(await harness.deadCount()).toBe(0);
  });

  it('disables an endpoint that answers 410 Gone: later events are dead-lettered unsent', async () => {
    const { receiver, harness, emit } = await setUp();
    receiver.setBehaviour(() => 410);
    await emit('sales-order.shipped');
    await expect.poll(() => receiver.received.length).toBe(1);
    await emit('sales-order.cancelled');
    let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
    await expect
      .poll(async () => (dead = [...dead, ...(await harness.deadLetters())]).length)
      .toBe(2);
    expect(dead.map((d) => header(d, 'x-dead-reason'))).toEqual(['endpoint-gone', 'endpoint-gone']);
    expect(receiver.received).toHaveLength(1);
    expect(
      await harness.registry.getSingleMetricAsString('warehouse_ingest_event_endpoints'),
    ).toContain('state="disabled"} 1');
  });

  it('delivers only the event types an endpoint subscribed to', async () => {
    const { receiver, emit } = await setUp({ webhookExtra: { events: ['sales-order.*'] } });
    await emit('purchase-order.received');
    const { id } = await emit('sales-order.shipped');
    await expect.poll(() => receiver.received.map((r) => r.id)).toEqual([id]);
  });

  it('keeps the time of an event sent without a timestamp across retries (its arrival, in seconds)', async () => {
    const { receiver, harness } = await setUp({ schedule: [0, 1100] });
    receiver.setBehaviour((_, nth) => (nth === 1 ? 500 : 200));
    await harness.publishRaw('sales-order.shipped.ACME', Buffer.from('{}'), {
      persistent: true,
      messageId: 'no-timestamp-1',
      type: 'sales-order.shipped',
      headers: { 'business-id': 'ACME' },
    });
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(2);
    const [first, retried] = receiver.received.map((r) => r.body.timestamp as string);
    expect(first).toMatch(/:\d\d\.000Z$/);
    expect(retried).toBe(first); // the same body, so the same outbound file name too
  });

  it('dead-letters malformed events with the reason, and counts each', async () => {
    const { harness } = await setUp();
    const good = {
      messageId: 'e-1',
      type: 'sales-order.shipped',
      headers: { 'business-id': 'ACME' },
    };
    const cases: Array<[string, Buffer, object]> = [
      ['missing-id', Buffer.from('{}'), { ...good, messageId: undefined }],
      ['missing-type', Buffer.from('{}'), { ...good, type: undefined }],
      ['missing-business', Buffer.from('{}'), { ...good, headers: {} }],
      ['not-json', Buffer.from('not json'), good],
      ['unknown-business', Buffer.from('{}'), { ...good, headers: { 'business-id': 'NOPE' } }],
    ];
    for (const [, content, properties] of cases)
      await harness.publishRaw('x.y', content, { persistent: true, ...properties });
    let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
    await expect
      .poll(async () => (dead = [...dead, ...(await harness.deadLetters())]).length)
      .toBe(cases.length);
    expect(dead.map((d) => header(d, 'x-dead-reason')).sort()).toEqual(
      cases.map(([reason]) => reason).sort(),
    );
    const counted = await harness.registry.getSingleMetricAsString(
      'warehouse_ingest_event_dead_letters_total',
    );
    for (const [reason] of cases) expect(counted).toContain(`reason="${reason}"} 1`);
  });
});
