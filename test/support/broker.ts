import { randomBytes } from 'node:crypto';
import { connect, type Channel, type ChannelModel, type MessageProperties } from 'amqplib';

/** The broker the suite talks to; `test/setup/services.ts` fails the run when it is down. */
export const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A name no other test (or earlier run) uses, so tests never see each other's messages. */
export function uniqueName(prefix: string): string {
  return `${prefix}.${process.pid}.${Date.now().toString(36)}.${randomBytes(3).toString('hex')}`;
}

export interface ConsumedMessage {
  /** The body parsed as JSON. */
  content: unknown;
  routingKey: string;
  properties: MessageProperties;
}

export interface TestTopology {
  readonly exchange: string;
  readonly queue: string;
  /** Takes every message the queue holds (as many as `checkQueue` counts) and returns them, in order. */
  messages(): Promise<ConsumedMessage[]>;
  /** Exact number of ready messages (`checkQueue`), unlike the management API, which lags. */
  count(): Promise<number>;
  /** (Re-)declares the exchange, the queue and its bindings; idempotent. */
  declare(): Promise<void>;
  /** Runs `fn` on a channel of the helper's own connection (e.g. to delete the exchange). */
  withChannel<T>(fn: (channel: Channel) => Promise<T>): Promise<T>;
  /** Deletes the queue and the exchange and closes the helper's connection. */
  cleanup(): Promise<void>;
}

/** A fresh durable topic exchange with one durable queue bound to `bindingKeys`. */
export async function declareTestTopology(options: {
  bindingKeys: readonly string[];
  prefix?: string;
}): Promise<TestTopology> {
  const prefix = options.prefix ?? 'test';
  const exchange = uniqueName(`${prefix}.x`);
  const queue = uniqueName(`${prefix}.q`);
  const connection: ChannelModel = await connect(AMQP_URL);
  connection.on('error', () => {});
  let open: Channel | undefined;

  // A failed operation closes a channel; open a new one next time instead of failing every later call.
  async function channel(): Promise<Channel> {
    if (open) return open;
    const fresh = await connection.createChannel();
    fresh.on('error', () => {});
    fresh.on('close', () => {
      if (open === fresh) open = undefined;
    });
    open = fresh;
    return fresh;
  }

  const topology: TestTopology = {
    exchange,
    queue,
    async messages() {
      // A consumer, not one basic.get per message: a get is a round trip (about 8 ms each on a
      // loaded machine here — 9,000 of them outlasted a test's 30 s), a consumer takes thousands in
      // a few hundred milliseconds. Auto-ack on a channel of its own, stopped at the count
      // `checkQueue` gave: like the gets, only for a queue nothing publishes to meanwhile.
      const ch = await connection.createChannel();
      ch.on('error', () => {});
      try {
        const { messageCount } = await ch.checkQueue(queue);
        const out: ConsumedMessage[] = [];
        if (messageCount === 0) return out;
        await new Promise<void>((resolve, reject) => {
          ch.consume(
            queue,
            (message) => {
              if (message === null)
                return reject(new Error(`the broker cancelled the consumer of ${queue}`));
              out.push({
                content: JSON.parse(message.content.toString('utf8')),
                routingKey: message.fields.routingKey,
                properties: message.properties,
              });
              if (out.length === messageCount) resolve();
            },
            { noAck: true },
          ).catch(reject);
        });
        return out;
      } finally {
        await ch.close().catch(() => {});
      }
    },
    async count() {
      return (await (await channel()).checkQueue(queue)).messageCount;
    },
    async declare() {
      const ch = await channel();
      await ch.assertExchange(exchange, 'topic', { durable: true });
      // The type the service declares records queues with by default (rabbitmq-topology.ts), so a
      // test may hand this queue to the service's configuration as it is.
      await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      for (const key of options.bindingKeys) await ch.bindQueue(queue, exchange, key);
    },
    async withChannel(fn) {
      return fn(await channel());
    },
    async cleanup() {
      try {
        const ch = await channel();
        await ch.deleteQueue(queue);
        await ch.deleteExchange(exchange);
      } finally {
        await connection.close().catch(() => {});
      }
    },
  };
  await topology.declare();
  return topology;
}
