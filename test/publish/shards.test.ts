import { connect } from 'amqplib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createPublisher, createRabbitMqPublisher } from '../../src/publish/index.js';
import { shardNames } from '../../src/publish/rabbitmq-topology.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { demoTenantYaml } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';
import { makeMessages } from './helpers.js';

const exchange = uniqueName('shards.x');
const queue = uniqueName('shards.q');
const SHARDS = 4;
const { exchange: shardExchange, queues: shardQueues } = shardNames(queue, SHARDS);

afterAll(async () => {
  const connection = await connect(AMQP_URL);
  const channel = await connection.createChannel();
  for (const name of shardQueues) await channel.deleteQueue(name);
  await channel.deleteExchange(shardExchange);
  await channel.deleteExchange(exchange);
  await connection.close();
});

/** Drains every shard (basic.get, auto-ack): the message ids found in each. */
async function drainShards(): Promise<string[][]> {
  const connection = await connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    const found: string[][] = [];
    for (const name of shardQueues) {
      const ids: string[] = [];
      for (let message = await channel.get(name, { noAck: true }); message; ) {
        ids.push(String(message.properties.messageId));
        message = await channel.get(name, { noAck: true });
      }
      found.push(ids);
    }
    return found;
  } finally {
    await connection.close().catch(() => {});
  }
}

/** A publisher declaring `queue` as SHARDS shards, bound to every sales order. */
const shardedPublisher = () =>
  createRabbitMqPublisher(
    {
      url: AMQP_URL,
      exchange,
      queues: [{ name: queue, bindingKeys: ['sales-orders.*'], shards: SHARDS }],
    },
    createLogger({ level: 'silent' }),
  );

describe('a sharded queue', () => {
  it("spreads one business's records over all shards, each message id always into the same shard, nothing lost", async () => {
    const publisher = shardedPublisher();
    await publisher.start();
    try {
      await vi.waitFor(
        async () => expect(await publisher.readiness()).toEqual({ ready: true, problems: [] }),
        { timeout: 10_000 },
      );
      // One business, one routing key; the same 200 ids published twice (a retried batch).
      const messages = makeMessages(200, 'sales-orders.B-1');
      await publisher.publish(messages);
      await publisher.publish(messages);

      const shards = await drainShards();
      const ids = messages.map((m) => m.messageId);
      expect(shards.flat().sort()).toEqual([...ids, ...ids].sort());
      for (const shard of shards) expect(shard.length).toBeGreaterThan(0);
      const shardOf = new Map<string, Set<number>>();
      shards.forEach((shard, index) => {
        for (const id of shard) shardOf.set(id, (shardOf.get(id) ?? new Set()).add(index));
      });
      expect([...shardOf.values()].every((where) => where.size === 1)).toBe(true);
    } finally {
      await publisher.close();
    }
  });

  it('takes the shard count from broker.queues[].shards in the configuration', async () => {
    const name = uniqueName('shards.cfg');
    const { exchange: cfgExchange, queues: cfgQueues } = shardNames(name, 3);
    const folder = tempFolder();
    const yaml = [
      await demoTenantYaml(),
      'broker:',
      `  exchange: ${exchange}`,
      '  queues:',
      `    - name: ${name}`,
      '      bindingKeys: ["#"]',
      '      shards: 3',
    ].join('\n');
    const config = loadConfig({
      env: {
        INGEST_CONFIG: folder.write('config.yaml', yaml),
        INGEST_ENV: 'development',
        AMQP_URL,
      },
    });
    const publisher = createPublisher(config, createLogger({ level: 'silent' }));
    await publisher.start();
    const connection = await connect(AMQP_URL);
    try {
      await vi.waitFor(
        async () => expect(await publisher.readiness()).toEqual({ ready: true, problems: [] }),
        { timeout: 10_000 },
      );
      const channel = await connection.createChannel();
      for (const q of cfgQueues) expect((await channel.checkQueue(q)).queue).toBe(q);
      for (const q of cfgQueues) await channel.deleteQueue(q);
      await channel.deleteExchange(cfgExchange);
    } finally {
      await publisher.close();
      await connection.close().catch(() => {});
    }
  });

  it('reports a deleted shard queue as not ready', async () => {
    const publisher = shardedPublisher();
    await publisher.start();
    try {
      await vi.waitFor(async () => expect((await publisher.readiness()).ready).toBe(true), {
        timeout: 10_000,
      });
      const connection = await connect(AMQP_URL);
      const channel = await connection.createChannel();
      await channel.deleteQueue(shardQueues[2]!);
      await connection.close();
      expect(await publisher.readiness()).toEqual({
        ready: false,
        problems: [`queue '${shardQueues[2]}' does not exist on the broker`],
      });
    } finally {
      await publisher.close();
    }
  });
});
