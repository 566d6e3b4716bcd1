import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { replayDeadLetters } from '../../src/cli/events/replay.js';
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
  expect(await replayDeadLetters({ url: AMQP_URL, events, selection: { since: future } })).toEqual(
    [],
  );
  const progress: number[] = [];
  const replayed = await replayDeadLetters({
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
