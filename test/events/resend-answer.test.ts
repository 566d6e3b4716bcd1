/**
 * What a resend (the API's, the portal's) answers and publishes, on the real broker: every
 * destination that will take the event — its outbound folders as well as its webhooks, as the
 * worker matches it afresh — and never a `webhook.test` event, which is sent anew instead.
 */
import { connect, type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmedChannel, type ConfirmedChannel } from '../../src/broker/confirms.js';
import { NoSubscriber } from '../../src/errors.js';
import { createEventActions } from '../../src/events/actions.js';
import type { Destination } from '../../src/events/destinations/index.js';
import { createDeliverer } from '../../src/events/destinations/webhook/deliver.js';
import { resolveEndpoints } from '../../src/events/subscriptions.js';
import type { EventEntry } from '../../src/history/store.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { testEventsConfig, webhook } from '../support/events-harness.js';
import { testSecret } from '../support/webhook-receiver.js';

const queue = uniqueName('resend.answer.q');
let connection: ChannelModel;
let publishing: ConfirmedChannel;

/** An outbound folder of a pipeline, as fileDestinations makes one (the resend only names it). */
const folder = (businessId: string, pipeline: string): Destination => ({
  kind: 'file',
  id: `file-${pipeline}`,
  name: `file:${pipeline}`,
  businessId,
  host: `local:/drops/${pipeline}/outbound`,
  target: 'folder',
  matches: (type) => type.startsWith('sales-order.'),
  attempt: async () => ({ outcome: 'delivered', file: 'written' }),
});

const event = (businessId: string, type: string): EventEntry => ({
  id: `evt-${uniqueName('r')}`,
  type,
  businessId,
  payload: { orderNumber: 'SO-1' },
  receivedAt: new Date(),
});

beforeAll(async () => {
  connection = await connect(AMQP_URL);
  const setup = await connection.createChannel();
  await setup.assertQueue(queue, { durable: false });
  publishing = confirmedChannel(await connection.createConfirmChannel(), '', 10_000);
});
afterAll(async () => {
  const channel = await connection.createChannel();
  await channel.deleteQueue(queue);
  await connection.close();
});

describe('a resend', () => {
  it('names the outbound folders beside the webhooks, and refuses a webhook.test event', async () => {
    const events = testEventsConfig();
    const env = { RESEND_ANSWER_SECRET: testSecret(93) };
    const webhooks = resolveEndpoints(
      {
        environment: 'development',
        events,
        tenants: [
          {
            businessId: 'ACME',
            webhooks: [
              webhook('https://erp.acme.example/hook', 'RESEND_ANSWER_SECRET', { id: 'erp' }),
            ],
          },
        ],
      },
      env,
    );
    const actions = createEventActions({
      queue,
      publishing: () => publishing,
      webhooks: () => webhooks,
      files: [folder('ACME', 'acme-out'), folder('FILESONLY', 'files-out')],
      deliverer: createDeliverer({ timeoutMs: 1000, responseBodyLimitBytes: 1024 }),
    });
    const count = async () =>
      (await (await connection.createChannel()).checkQueue(queue)).messageCount;

    expect(await actions.resend(event('ACME', 'sales-order.shipped'))).toEqual([
      'erp',
      'file:acme-out',
    ]);
    // A business with an outbound folder and no webhook: the folder gets it, no refusal.
    expect(await actions.resend(event('FILESONLY', 'sales-order.shipped'))).toEqual([
      'file:files-out',
    ]);
    expect(await count()).toBe(2);

    await expect(actions.resend(event('ACME', 'webhook.test'))).rejects.toThrow(NoSubscriber);
    await expect(actions.resend(event('ACME', 'webhook.test'))).rejects.toThrow(
      /not sent again: send a new test event/,
    );
    expect(await count()).toBe(2);
  });
});
