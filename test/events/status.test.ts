import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { eventsStatus } from '../../src/cli/events/status.js';
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
    expect.objectContaining({
      businessId: 'ACME',
      endpoint: `webhooks[0] (127.0.0.1:${receiver.port})`,
      enabled: true,
      retrying: 1,
      nextAttemptAt: expect.any(String),
      dead: 0,
      lastFailure: 'HTTP 500: status 500',
    }),
  ]);
  expect(Date.parse(status.endpoints[0]!.nextAttemptAt!)).toBeGreaterThanOrEqual(before + 600_000);
  // Looking took nothing away.
  expect(await harness.deadCount()).toBe(1);
  expect((await eventsStatus({ url: AMQP_URL, events, tenants })).endpoints[0]?.retrying).toBe(1);
});

it("status adds each worker's own figures: delivered, failing since, backed off until", async () => {
  const good = await startWebhookReceiver([testSecret(10)]);
  const bad = await startWebhookReceiver([testSecret(11)]);
  open.push(good, bad);
  bad.setBehaviour(() => 503);
  const events = testEventsConfig({
    retrySchedule: [0, 600_000],
    circuit: { failures: 1, coolDownMs: 600_000, maxCoolDownMs: 600_000 },
  });
  const tenants = [
    { businessId: 'GOOD', webhooks: [webhook(good.url, 'G')] },
    { businessId: 'BAD', webhooks: [webhook(bad.url, 'B')] },
  ];
  const env = { G: testSecret(10), B: testSecret(11) };
  const harness = await startEventsHarness({ events, env, tenants, reportIntervalMs: 100 });
  open.push(harness);
  const before = new Date().toISOString();
  for (const businessId of ['GOOD', 'GOOD', 'BAD'])
    await emitEvent({ url: AMQP_URL, events, businessId, type: 'sales-order.shipped', data: {} });

  const of = async (businessId: string) =>
    (await eventsStatus({ url: AMQP_URL, events, tenants })).endpoints.find(
      (e) => e.businessId === businessId,
    );
  await expect.poll(async () => (await of('GOOD'))?.delivered).toBe(2);
  await expect.poll(async () => (await of('BAD'))?.backedOffUntil).toBeDefined();
  const status = await eventsStatus({ url: AMQP_URL, events, tenants });
  expect(status.workers).toBe(1);
  const badStatus = status.endpoints.find((e) => e.businessId === 'BAD')!;
  expect(badStatus).toMatchObject({ delivered: 0, retrying: 1 });
  expect(badStatus.failingSince! >= before).toBe(true);
  expect(badStatus.backedOffUntil! > badStatus.failingSince!).toBe(true);
  expect(status.endpoints.find((e) => e.businessId === 'GOOD')?.failingSince).toBeUndefined();
});
