import { connect } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import type { Endpoint } from '../../src/events/subscriptions.js';
import { eventsTopology } from '../../src/events/topology.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import {
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

/**
 * Hardening round 3, finding 1: an event that failed before the delivery's `try` was neither
 * acked nor dead-lettered, held its prefetch slot for good (also across restarts) and, with
 * enough of them, stopped delivery for every business.
 */
const SECRET = testSecret(3);
const env = { ACME_KEY: SECRET, BETA_KEY: SECRET };
const open = closedAfterEach();

async function setUp() {
  const receiver = await startWebhookReceiver([SECRET]);
  open.push(receiver);
  // A prefetch of 8: fewer poison events than before the fix filled every slot.
  const events = testEventsConfig({ prefetch: 8 });
  const harness = await startEventsHarness({
    events,
    env,
    tenants: [
      { businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME_KEY')] },
      { businessId: 'BETA', webhooks: [webhook(receiver.url, 'BETA_KEY')] },
    ],
  });
  open.push(harness);
  return { receiver, harness, events };
}

const header = (message: { properties: { headers?: Record<string, unknown> } }, name: string) =>
  String(message.properties.headers?.[name]);

async function drainDead(harness: EventsHarness, count: number) {
  let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
  await expect
    .poll(async () => (dead = [...dead, ...(await harness.deadLetters())]).length, {
      timeout: 15_000,
    })
    .toBe(count);
  return dead;
}

describe('poison events never block the delivery queue', () => {
  it('dead-letters unrenderable events with their reason, and delivers every good event of every business', async () => {
    const { receiver, harness, events } = await setUp();
    const base = { persistent: true, type: 'sales-order.shipped' };
    let deep = '{}';
    for (let i = 0; i < 100_000; i++) deep = `{"a":${deep}}`;
    const poison: Array<[string, Buffer, object]> = [];
    for (let i = 0; i < 6; i++) {
      poison.push([
        'invalid-timestamp',
        Buffer.from('{}'),
        // Microseconds: new Date(seconds * 1000) is an Invalid Date.
        {
          ...base,
          messageId: `us-${i}`,
          timestamp: 1_764_000_000_000_000 + i,
          headers: { 'business-id': 'ACME' },
        },
      ]);
      poison.push([
        'too-deep',
        Buffer.from(deep),
        { ...base, messageId: `deep-${i}`, headers: { 'business-id': 'BETA' } },
      ]);
      poison.push([
        'invalid-id',
        Buffer.from('{}'),
        { ...base, messageId: `crlf-${i}\r\nx-injected: 1`, headers: { 'business-id': 'ACME' } },
      ]);
    }
    for (const [, content, properties] of poison)
      await harness.publishRaw('sales-order.shipped.x', content, properties);
    const good: string[] = [];
    for (let i = 0; i < 40; i++) {
      const { id } = await emitEvent({
        url: AMQP_URL,
        events,
        businessId: i % 2 === 0 ? 'ACME' : 'BETA',
        type: 'sales-order.shipped',
        data: { n: i },
      });
      good.push(id);
    }
    await expect
      .poll(() => new Set(receiver.received.map((r) => r.id)).size, { timeout: 15_000 })
      .toBe(40);
    expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(good));
    const dead = await drainDead(harness, poison.length);
    expect(dead.map((d) => header(d, 'x-dead-reason')).sort()).toEqual(
      poison.map(([reason]) => reason).sort(),
    );
    expect(
      header(dead.find((d) => d.properties.messageId === 'us-0')!, 'x-webhook-last-failure'),
    ).toMatch(/not POSIX seconds/);
    // Nothing left behind, acked or not.
    const { messageCount } = await (async () => {
      const connection = await connect(AMQP_URL);
      try {
        const channel = await connection.createChannel();
        return await channel.checkQueue(eventsTopology(events).queue);
      } finally {
        await connection.close();
      }
    })();
    expect(messageCount).toBe(0);
  });

  it('delivers a valid event with a 241-character type (its webhook and its outbound file name)', async () => {
    const { receiver, events } = await setUp();
    const type = `sales-order.${'x'.repeat(228)}`;
    expect(type).toHaveLength(240);
    await emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type: `${type}y`, data: {} });
    await expect.poll(() => receiver.received.length).toBe(1);
    expect(receiver.received[0]?.body.type).toBe(`${type}y`);
  });

  it('dead-letters an event whose handling throws (reason unhandled) and goes on with the next', async () => {
    const { receiver, harness, events } = await setUp();
    const throwing: Endpoint = {
      kind: 'webhook',
      id: 'throws',
      name: 'throws',
      businessId: 'BETA',
      url: new URL(receiver.url),
      host: 'test',
      keys: [],
      patterns: ['**'],
      allowPrivateNetwork: true,
      matches: () => {
        throw new Error('a defect in matching');
      },
    };
    harness.consumer.setWebhooks(
      new Map([
        ['BETA', [throwing]],
        ['ACME', []],
      ]),
    );
    await emitEvent({ url: AMQP_URL, events, businessId: 'BETA', type: 'a.b', data: {} });
    const [letter] = await drainDead(harness, 1);
    expect(header(letter!, 'x-dead-reason')).toBe('unhandled');
    expect(header(letter!, 'x-webhook-last-failure')).toBe('Handling failed: a defect in matching');
    expect(
      await harness.registry.getSingleMetricAsString('warehouse_ingest_event_dead_letters_total'),
    ).toContain('reason="unhandled"} 1');
    expect(receiver.received).toEqual([]);
  });
});
