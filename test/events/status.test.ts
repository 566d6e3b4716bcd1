import { expect, it } from 'vitest';
import { emitEvent } from '../../src/events/emit.js';
import { eventsStatus } from '../../src/events/status.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const open = closedAfterEach();

it('status shows per endpoint what is retrying (next attempt), dead, the last failure, and malformed letters, taking nothing', async () => {
  const receiver = await startWebhookReceiver([testSecret(9)]);
  open.push(receiver);
  receiver.setBehaviour(() => 500);
  // A long second delay: the event stays parked while we look.
  const events = testEventsConfig({ retrySchedule: [0, 600_000] });
  const tenants = [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'S')] }];
  const harness = await startEventsHarness({ events, env: { S: testSecret(9) }, tenants });
  open.push(harness);
  const before = Date.now();
  await emitEvent({
    url: AMQP_URL,
    events,
    businessId: 'ACME',
    type: 'sales-order.shipped',
    data: {},
  });
  await harness.publishRaw('x.y', Buffer.from('{}'), { headers: { 'business-id': 'ACME' } });
  await expect.poll(() => harness.deadCount()).toBe(1);
  await expect
    .poll(
      async () => (await eventsStatus({ url: AMQP_URL, events, tenants })).endpoints[0]?.retrying,
    )
    .toBe(1);

  const status = await eventsStatus({ url: AMQP_URL, events, tenants });
  expect(status.malformed).toEqual({ 'missing-id': 1 });
  expect(status.endpoints).toEqual([
    {
      businessId: 'ACME',
      endpoint: `127.0.0.1:${receiver.port}`,
      enabled: true,
      retrying: 1,
      nextAttemptAt: expect.any(String),
      dead: 0,
      lastFailure: 'HTTP 500: status 500',
    },
  ]);
  expect(Date.parse(status.endpoints[0]!.nextAttemptAt!)).toBeGreaterThanOrEqual(before + 600_000);
  // Looking took nothing away.
  expect(await harness.deadCount()).toBe(1);
  expect((await eventsStatus({ url: AMQP_URL, events, tenants })).endpoints[0]?.retrying).toBe(1);
});
