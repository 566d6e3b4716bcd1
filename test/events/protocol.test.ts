import { connect } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { retryQueueName } from '../../src/events/retry.js';
import type { EventsConfig } from '../../src/events/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret, type Behaviour } from '../support/webhook-receiver.js';

/** The delivery protocol with a receiver: Retry-After, abort-message, traceparent. */
const SECRET = testSecret(7);
const env = { ACME_KEY: SECRET };
const open = closedAfterEach();

async function setUp(
  behaviour: Behaviour,
  events: EventsConfig = testEventsConfig(),
  log?: Logger,
) {
  const receiver = await startWebhookReceiver([SECRET]);
  open.push(receiver);
  receiver.setBehaviour(behaviour);
  const harness = await startEventsHarness({
    events,
    env,
    tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME_KEY')] }],
    ...(log ? { log } : {}),
  });
  open.push(harness);
  const emit = (type = 'sales-order.shipped') =>
    emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type, data: {} });
  return { receiver, harness, events, emit };
}

/** Messages waiting in a queue now (a side connection; the queue is the harness's). */
async function waiting(queue: string): Promise<number> {
  const connection = await connect(AMQP_URL);
  try {
    return (await (await connection.createChannel()).checkQueue(queue)).messageCount;
  } finally {
    await connection.close();
  }
}

const metric = (harness: { registry: { getSingleMetricAsString(n: string): Promise<string> } }) =>
  harness.registry.getSingleMetricAsString('warehouse_ingest_event_dead_letters_total');

describe('Retry-After on 429 and 503', () => {
  // Delays on the broker: 200 ms, 1000 ms (the defer queue), 2500 ms.
  const events = () => testEventsConfig({ retrySchedule: [0, 200, 2500] });

  it('a 503 with Retry-After: 2 parks the copy on the smallest retry queue of at least 2 s', async () => {
    const config = events();
    const { receiver, harness, emit } = await setUp(
      (_, nth) => (nth === 1 ? { status: 503, headers: { 'retry-after': '2' } } : 204),
      config,
    );
    const { id } = await emit();
    const queue = (ms: number) => retryQueueName(config.queue.name, ms, 'quorum');
    await expect.poll(() => waiting(queue(2500))).toBe(1);
    expect(await waiting(queue(200))).toBe(0);
    expect(receiver.received).toHaveLength(1);
    await expect
      .poll(() => receiver.received.map((r) => r.id), { timeout: 10_000 })
      .toEqual([id, id]);
    expect(await harness.deadCount()).toBe(0);
  });

  it("a 429 asking for an hour waits the schedule's longest step instead, and still counts an attempt", async () => {
    const config = testEventsConfig({ retrySchedule: [0, 200, 2500] });
    const { receiver, harness, emit } = await setUp(
      () => ({ status: 429, headers: { 'retry-after': '3600' } }),
      config,
    );
    await emit();
    await expect.poll(() => waiting(retryQueueName(config.queue.name, 2500, 'quorum'))).toBe(1);
    // Attempt 2 is parked on the longest step too (its own step), then the schedule has run out.
    await expect.poll(() => harness.deadCount(), { timeout: 15_000 }).toBe(1);
    const letters = await harness.deadLetters();
    expect(receiver.received).toHaveLength(3);
    expect(letters[0]?.properties.headers?.['x-dead-reason']).toBe('attempts-exhausted');
    expect(letters[0]?.properties.headers?.['x-webhook-attempts']).toBe(3);
  });
});

describe('webhook-delivery: abort-message', () => {
  it('dead-letters that one event at once with its own reason; the next event to the endpoint is delivered', async () => {
    const { receiver, harness, emit } = await setUp((_, nth) =>
      nth === 1 ? { status: 422, headers: { 'webhook-delivery': 'abort-message' } } : 204,
    );
    expect(await metric(harness)).toContain('reason="receiver-aborted"} 0');
    const first = await emit();
    await expect.poll(() => harness.deadCount()).toBe(1);
    const [letter] = await harness.deadLetters();
    expect(letter?.properties.messageId).toBe(first.id);
    expect(letter?.properties.headers).toMatchObject({
      'x-dead-reason': 'receiver-aborted',
      'x-webhook-attempts': 1,
    });
    expect(String(letter?.properties.headers?.['x-webhook-last-failure'])).toMatch(
      /^HTTP 422 with webhook-delivery: abort-message/,
    );
    expect(await metric(harness)).toContain('reason="receiver-aborted"} 1');
    const second = await emit();
    await expect.poll(() => receiver.received.map((r) => r.id)).toEqual([first.id, second.id]);
    await expect
      .poll(() =>
        harness.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total'),
      )
      .toContain('outcome="delivered",business="ACME"} 1');
  });
});

describe('traceparent on each delivery', () => {
  const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
  const SPAN = '00f067aa0ba902b7';
  const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

  it("continues the event's trace with a span of its own per attempt (retries too), tracestate passed on", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const { receiver, harness } = await setUp(
      (_, nth) => (nth === 1 ? 500 : 204),
      testEventsConfig(),
      log,
    );
    await harness.publishRaw('sales-order.shipped.ACME', Buffer.from('{}'), {
      persistent: true,
      messageId: 'evt-traced',
      type: 'sales-order.shipped',
      headers: {
        'business-id': 'ACME',
        traceparent: `00-${TRACE}-${SPAN}-01`,
        tracestate: 'vendor=1',
      },
    });
    await expect.poll(() => receiver.received.length).toBe(2);
    const parents = receiver.received.map((r) => W3C.exec(String(r.headers.traceparent)));
    expect(parents.map((m) => m?.[1])).toEqual([TRACE, TRACE]);
    expect(parents.map((m) => m?.[3])).toEqual(['01', '01']);
    const spans = parents.map((m) => m?.[2]);
    expect(new Set([...spans, SPAN]).size).toBe(3);
    expect(receiver.received.map((r) => r.headers.tracestate)).toEqual(['vendor=1', 'vendor=1']);
    // Its delivery log lines carry the trace id, as the inbound half's do.
    await expect
      .poll(() => lines.find((line) => line.msg === 'event delivered')?.traceId)
      .toBe(TRACE);
  });

  it('begins a trace for an event that came without one (or with an invalid one)', async () => {
    const { receiver, harness } = await setUp(() => 204);
    await harness.publishRaw('a.b.ACME', Buffer.from('{}'), {
      messageId: 'evt-untraced',
      type: 'a.b',
      headers: { 'business-id': 'ACME', traceparent: `00-${'0'.repeat(32)}-${SPAN}-01` },
    });
    await expect.poll(() => receiver.received.length).toBe(1);
    const match = W3C.exec(String(receiver.received[0]?.headers.traceparent));
    expect(match?.[1]).not.toBe('0'.repeat(32));
    expect(match?.[2]).not.toBe(SPAN);
    expect(receiver.received[0]?.headers.tracestate).toBeUndefined();
  });
});
