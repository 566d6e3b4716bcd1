import { connect } from 'amqplib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { PublishNacked } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { createRabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { captureLog, makeMessages } from './helpers.js';

const exchange = uniqueName('args.x');
const queue = uniqueName('args.q');

afterAll(async () => {
  const connection = await connect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.deleteQueue(queue);
  await channel.deleteExchange(exchange);
  await connection.close();
});

describe('declared queues with arguments', () => {
  it('declares a queue with the configured arguments (here a quorum queue) and becomes ready', async () => {
    const publisher = createRabbitMqPublisher(
      {
        url: AMQP_URL,
        exchange,
        queues: [{ name: queue, bindingKeys: ['#'], arguments: { 'x-queue-type': 'quorum' } }],
      },
      createLogger({ level: 'silent' }),
    );
    await publisher.start();
    try {
      await vi.waitFor(
        async () => expect(await publisher.readiness()).toEqual({ ready: true, problems: [] }),
        { timeout: 10_000 },
      );
      const connection = await connect(AMQP_URL);
      const channel = await connection.createChannel();
      channel.on('error', () => {});
      // Re-declaring as a classic queue is refused by the broker: the queue really is a quorum queue.
      await expect(
        channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic' } }),
      ).rejects.toThrow(/PRECONDITION_FAILED/);
      await connection.close().catch(() => {});
    } finally {
      await publisher.close();
    }
  });

  it('answers a nacked batch as failed and opens a fresh publishing channel, then publishes again', async () => {
    const full = uniqueName('args.full');
    const { log, text } = captureLog();
    const publisher = createRabbitMqPublisher(
      {
        url: AMQP_URL,
        exchange,
        // Holds one message and refuses the rest with a nack: the way to get a nack on demand.
        queues: [
          {
            name: full,
            bindingKeys: ['full.#'],
            arguments: {
              'x-queue-type': 'classic',
              'x-max-length': 1,
              'x-overflow': 'reject-publish',
            },
          },
        ],
      },
      log,
    );
    await publisher.start();
    try {
      await expect(publisher.publish(makeMessages(3, 'full.x'))).rejects.toBeInstanceOf(
        PublishNacked,
      );
      await vi.waitFor(() => expect(text()).toContain('opening a fresh publishing channel'));
      const connection = await connect(AMQP_URL);
      await (await connection.createChannel()).purgeQueue(full);
      // On the fresh channel, once it is open.
      await vi.waitFor(() => publisher.publish(makeMessages(1, 'full.x')), { timeout: 10_000 });
      await (await connection.createChannel()).deleteQueue(full);
      await connection.close();
    } finally {
      await publisher.close();
    }
  });
});
