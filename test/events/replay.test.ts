import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { replayDeadLetters } from '../../src/cli/events/replay.js';
import { eventsStatus } from '../../src/cli/events/status.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const open = closedAfterEach();

it('dead letters are replayed by selection and delivered; the others stay', async () => {
  const receiver = await startWebhookReceiver([testSecret(7)]);
  open.push(receiver);
  receiver.setBehaviour(() => 500);
  const events = testEventsConfig({ retrySchedule: [0, 50] });
  const harness = await startEventsHarness({
    events,
    env: { S: testSecret(7) },
    tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'S')] }],
  });
  open.push(harness);
  const emit = () =>
    emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'ACME',
      type: 'return-goods.received',
      data: {},
    });
  const first = await emit();
  const second = await emit();
  await expect.poll(() => harness.deadCount()).toBe(2);
  expect(receiver.received).toHaveLength(4);

  receiver.setBehaviour(() => 200);
  const future = Date.now() + 60_000;
  expect(await replayDeadLetters({ url: AMQP_URL, events, selection: { since: future } })).toEqual({
    replayed: [],
    heldBack: [],
  });
  const progress: number[] = [];
  const { replayed } = await replayDeadLetters({
    url: AMQP_URL,
    events,
    selection: { id: first.id, businessId: 'ACME' },
    onReplayed: (_, done) => progress.push(done),
  });
  expect(replayed).toEqual([
    {
      id: first.id,
      type: 'return-goods.received',
      businessId: 'ACME',
      reason: 'attempts-exhausted',
    },
  ]);
  expect(progress).toEqual([1]);
  await expect.poll(() => receiver.received.at(-1)?.id).toBe(first.id);
  expect(receiver.received).toHaveLength(5);
  const left = await harness.deadLetters();
  expect(left.map((m) => m.properties.messageId)).toEqual([second.id]);
});

it('letters of an endpoint a running worker reports backed off stay, and say why; --force replays them', async () => {
  const receiver = await startWebhookReceiver([testSecret(8)]);
  open.push(receiver);
  receiver.setBehaviour(() => 503);
  // Two failures in a row open the circuit for a long cool-down; the second retry step is short,
  // so each event is dead after its two attempts.
  const events = testEventsConfig({
    retrySchedule: [0, 50],
    circuit: { failures: 2, coolDownMs: 600_000, maxCoolDownMs: 600_000 },
  });
  const tenants = [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'S')] }];
  const harness = await startEventsHarness({
    events,
    env: { S: testSecret(8) },
    tenants,
    reportIntervalMs: 100,
  });
  open.push(harness);
  const emitted = await emitEvent({
    url: AMQP_URL,
    events,
    businessId: 'ACME',
    type: 'return-goods.received',
    data: {},
  });
  await expect.poll(() => harness.deadCount()).toBe(1);
  const reported = async () =>
    (await eventsStatus({ url: AMQP_URL, events, tenants })).endpoints[0]?.backedOffUntil;
  await expect.poll(reported).toBeDefined();

  // Replayed now it would walk through its retry steps without an attempt: it stays.
  receiver.setBehaviour(() => 200);
  const held = await replayDeadLetters({ url: AMQP_URL, events, selection: {} });
  expect(held.replayed).toEqual([]);
  expect(held.heldBack).toEqual([
    {
      endpoint: expect.any(String),
      businessId: 'ACME',
      why: expect.stringMatching(/^backed off until \S+ in worker /),
      events: 1,
    },
  ]);
  expect(await harness.deadCount()).toBe(1);
  expect(receiver.received).toHaveLength(2);

  // Forced, it goes; the worker's circuit is still open, so it is not attempted, and comes back.
  const forced = await replayDeadLetters({ url: AMQP_URL, events, selection: {}, force: true });
  expect(forced.replayed.map((e) => e.id)).toEqual([emitted.id]);
  expect(forced.heldBack).toEqual([]);
  await expect.poll(() => harness.deadCount()).toBe(1);
  expect(receiver.received).toHaveLength(2);
  expect((await harness.deadLetters()).map((m) => m.properties.messageId)).toEqual([emitted.id]);
});
