import { connect } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { switchEndpoint, targetsOf } from '../../src/cli/events/switch.js';
import { eventsSchema, type EventsConfig } from '../../src/events/config.js';
import {
  endpointDisabledMessage,
  OPERATOR_BUSINESS,
  publishOperatorEvent,
} from '../../src/events/operator.js';
import { webhookEndpointId } from '../../src/events/subscriptions.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret, type Behaviour } from '../support/webhook-receiver.js';

/**
 * The operator webhook: told of an endpoint disabled by a 410 and of an event given up on, as
 * Standard Webhooks signed with its own secret (checked by the `standardwebhooks` package).
 */
const PARTNER = testSecret(8);
const OPERATOR = testSecret(9);
const env = { ACME_KEY: PARTNER, OPERATOR_KEY: OPERATOR };
const open = closedAfterEach();

async function setUp(partnerBehaviour: Behaviour, schedule: number[]) {
  const partner = await startWebhookReceiver([PARTNER]);
  const operator = await startWebhookReceiver([OPERATOR, PARTNER]);
  open.push(partner, operator);
  partner.setBehaviour(partnerBehaviour);
  // One attempt at a time per endpoint: the operator webhook gets its events in queue order.
  const base = testEventsConfig({ retrySchedule: schedule, concurrencyPerEndpoint: 1 });
  const events: EventsConfig = eventsSchema.parse({
    ...base,
    operatorWebhook: { url: operator.url, secret: { env: 'OPERATOR_KEY' } },
  });
  const acme = webhook(partner.url, 'ACME_KEY', { id: 'main' });
  const harness = await startEventsHarness({
    events,
    env,
    tenants: [{ businessId: 'ACME', webhooks: [acme] }],
  });
  open.push(harness);
  const emit = () =>
    emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type: 'sales-order.shipped', data: {} });
  const endpoint = {
    id: webhookEndpointId('ACME', acme),
    kind: 'webhook',
    host: new URL(partner.url).host,
  };
  return { partner, operator, harness, events, emit, endpoint, acme };
}

/** What a command (`events disable`) does: publish an operator event with confirms. */
async function publishAsCommand(events: EventsConfig, reason: string): Promise<boolean> {
  const connection = await connect(AMQP_URL);
  try {
    const channel = await connection.createConfirmChannel();
    const endpoint = { id: 'e-1', kind: 'webhook', host: 'h.example' } as const;
    const message = endpointDisabledMessage({
      businessId: 'ACME',
      endpoint,
      disabledBy: 'operator',
      reason,
    });
    return await publishOperatorEvent(channel, events, message);
  } finally {
    await connection.close();
  }
}

describe('the operator webhook', () => {
  it('receives a signed endpoint.disabled after an endpoint answered 410', async () => {
    const { operator, harness, events, emit, endpoint, acme } = await setUp(() => 410, [0, 100]);
    const { id } = await emit();
    await expect.poll(() => operator.received.length).toBe(1);
    const [notice] = operator.received;
    expect(notice?.verifiedWith).toEqual([OPERATOR]);
    expect(notice?.id).not.toBe(id);
    expect(notice?.body).toEqual({
      type: 'endpoint.disabled',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      businessId: OPERATOR_BUSINESS,
      data: { businessId: 'ACME', endpoint, disabledBy: 'gone', eventId: id, reason: 'HTTP 410' },
    });
    expect(await harness.deadCount()).toBe(1);
    // The next event for the disabled endpoint is dead-lettered without telling the operator
    // again: what reaches it next is an operator's disable, published after that event.
    await emit();
    await expect.poll(() => harness.deadCount()).toBe(2);
    // `events disable --endpoint main`, as the command runs it.
    const command = {
      url: AMQP_URL,
      events,
      tenants: [{ businessId: 'ACME', webhooks: [acme] }],
      endpoint: 'main',
    };
    await switchEndpoint({ ...command, action: 'disable' }, targetsOf(command));
    await expect.poll(() => operator.received.length).toBe(2);
    expect(operator.received[1]?.verifiedWith).toEqual([OPERATOR]);
    expect(operator.received[1]?.body).toMatchObject({
      type: 'endpoint.disabled',
      data: { businessId: 'ACME', endpoint, disabledBy: 'operator', reason: 'events disable' },
    });
  });

  it('receives a signed message.attempt.exhausted when an event is dead-lettered after its last attempt', async () => {
    const { partner, operator, harness, events, emit, endpoint } = await setUp(() => 503, [0, 100]);
    const { id } = await emit();
    await expect.poll(() => operator.received.length).toBe(1);
    expect(partner.received).toHaveLength(2);
    const [notice] = operator.received;
    expect(notice?.verifiedWith).toEqual([OPERATOR]);
    expect(notice?.body).toMatchObject({
      type: 'message.attempt.exhausted',
      businessId: OPERATOR_BUSINESS,
      data: {
        businessId: 'ACME',
        endpoint,
        eventId: id,
        eventType: 'sales-order.shipped',
        attempts: 2,
        lastFailure: 'HTTP 503: status 503',
        deadLetterQueue: `${events.queue.name}.dead`,
      },
    });
    const [letter] = await harness.deadLetters();
    expect(letter?.properties.messageId).toBe(id);
    // The service's own event: not held against the warehouse's event catalog.
    expect(
      await harness.registry.getSingleMetricAsString(
        'warehouse_ingest_event_contract_mismatches_total',
      ),
    ).toContain('type="other"} 0');
    expect(letter?.properties.headers?.['x-dead-reason']).toBe('attempts-exhausted');
  });

  it('takes nothing from a command when no operator webhook is configured', async () => {
    expect(await publishAsCommand(testEventsConfig(), 'by hand')).toBe(false);
  });
});
