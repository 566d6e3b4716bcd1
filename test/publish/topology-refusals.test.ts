import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueTypeMismatch, ShardPluginMissing } from '../../src/operator-errors.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/main.js';
import { createRabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { demoTenantYaml } from '../support/http-app.js';
import { type RabbitMqNode, startRabbitMqNode } from '../support/rabbitmq-node.js';
import { tempFolder } from '../support/temp.js';

/**
 * What the broker refuses at start-up and waiting cannot fix: start() fails with a typed error
 * that says what to do, instead of a reconnect loop that logs "could not connect" for ever.
 */
describe('start-up refusals', () => {
  const exchange = uniqueName('refusals.x');
  const classic = uniqueName('refusals.classic');

  afterAll(async () => {
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.deleteQueue(classic);
    await channel.deleteExchange(exchange);
    await connection.close();
  });

  it('declares records queues as quorum queues by default', async () => {
    const queue = uniqueName('refusals.default');
    const publisher = createRabbitMqPublisher(
      { url: AMQP_URL, exchange, queues: [{ name: queue, bindingKeys: ['#'] }] },
      createLogger({ level: 'silent' }),
    );
    await publisher.start();
    await publisher.close();
    const connection = await connect(AMQP_URL);
    connection.on('error', () => {});
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => {});
      await expect(
        channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'classic' } }),
      ).rejects.toThrow(/inequivalent arg 'x-queue-type'.*current is (the value )?'quorum'/);
      await (await connection.createChannel()).deleteQueue(queue);
    } finally {
      await connection.close().catch(() => {});
    }
  });

  it('names an existing classic queue and the two ways out, and stops the start', async () => {
    const connection = await connect(AMQP_URL);
    await (await connection.createChannel()).assertQueue(classic, { durable: true });
    await connection.close();
    const publisher = createRabbitMqPublisher(
      { url: AMQP_URL, exchange, queues: [{ name: classic, bindingKeys: ['#'] }] },
      createLogger({ level: 'silent' }),
    );
    const started = publisher.start();
    await expect(started).rejects.toBeInstanceOf(QueueTypeMismatch);
    const error = (await started.catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(`Queue '${classic}' exists on the broker as a classic queue`);
    expect(error.message).toContain('declares it quorum');
    expect(error.message).toContain('a new name in broker.queues');
    expect(error.message).toContain('`arguments: { x-queue-type: classic }`');
    expect(publisher.state).toBe('closed');
    await publisher.close();
  });

  it('keeps using an existing classic queue declared as such in the configuration', async () => {
    const publisher = createRabbitMqPublisher(
      {
        url: AMQP_URL,
        exchange,
        queues: [{ name: classic, bindingKeys: ['#'], arguments: { 'x-queue-type': 'classic' } }],
      },
      createLogger({ level: 'silent' }),
    );
    try {
      await publisher.start();
      expect(publisher.state).toBe('connected');
    } finally {
      await publisher.close();
    }
  });

  describe('shards without the consistent-hash plugin', () => {
    let node: RabbitMqNode;
    beforeAll(async () => {
      node = await startRabbitMqNode('noplugin'); // its plugins file is empty
    }, 90_000);
    afterAll(() => node?.destroy());

    it('stops the start naming the plugin, instead of reconnecting for ever', async () => {
      const publisher = createRabbitMqPublisher(
        {
          url: node.url,
          exchange: 'records',
          queues: [{ name: 'records', bindingKeys: ['#'], shards: 4 }],
          reconnect: { initialDelayMs: 50, maxDelayMs: 100 },
        },
        createLogger({ level: 'silent' }),
      );
      const error = await publisher.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ShardPluginMissing);
      expect((error as Error).message).toContain(
        'rabbitmq-plugins enable rabbitmq_consistent_hash_exchange',
      );
      expect((error as Error).message).toContain(`node 127.0.0.1:${node.port}`);
      expect(publisher.state).toBe('closed');
      await publisher.close();
    });

    it('stops `serve` at start-up with that message, before it listens', async () => {
      const folder = tempFolder('refusals-');
      mkdirSync(path.join(folder.dir, 'pipelines'));
      const config = folder.write(
        'config.yaml',
        [
          `dataDirectory: ${folder.dir}/data`,
          `pipelinesDirectory: ${folder.dir}/pipelines`,
          'broker:',
          '  exchange: records',
          '  queues: [{ name: records, bindingKeys: ["#"], shards: 2 }]',
          await demoTenantYaml(),
        ].join('\n'),
      );
      const started = startService({
        env: {
          INGEST_ENV: 'development',
          INGEST_CONFIG: config,
          AMQP_URL: node.url,
          PORT: '0',
          ADMIN_PORT: '0',
        },
        log: createLogger({ level: 'silent' }),
      });
      await expect(started).rejects.toBeInstanceOf(ShardPluginMissing);
      await expect(started).rejects.toThrow("broker.queues 'records' has `shards`");
    });
  });
});
