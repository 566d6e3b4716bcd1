import type { Channel, ChannelModel } from 'amqplib';
import { brokerNodeOf } from '../broker/connection.js';
import { QueueTypeMismatch, ShardPluginMissing } from '../operator-errors.js';

/** What the publisher declares on every (re)connect, and what readiness checks still exists. */
export interface Topology {
  readonly exchange: string;
  readonly queues: ReadonlyArray<{
    readonly name: string;
    readonly bindingKeys: readonly string[];
    readonly arguments?: Readonly<Record<string, unknown>>;
    /** Spread over this many queues by message id (see `shardNames`); absent = one queue. */
    readonly shards?: number;
    /** An older queue this one replaces (a rename, e.g. classic → quorum): unbound, left to drain. */
    readonly replaces?: string;
  }>;
}

/** An older queue a declared one replaces, once unbound: what it still holds for its consumers. */
export interface ReplacedQueue {
  readonly name: string;
  readonly replacedBy: string;
  /** Messages left in it; undefined once it was deleted. */
  readonly messages?: number;
}

/**
 * Records queues are quorum queues unless their arguments say otherwise: replicated, so a
 * cluster keeps them through a node loss, and faster than a classic queue on one node too
 * (docs/performance.md). `x-queue-type` in a queue's arguments overrides it.
 */
export const DEFAULT_QUEUE_TYPE = 'quorum';

/** The arguments a queue is declared with: its own, over the default queue type. */
export function queueArguments(
  queue: Topology['queues'][number],
): Readonly<Record<string, unknown>> {
  return { 'x-queue-type': DEFAULT_QUEUE_TYPE, ...queue.arguments };
}

/**
 * The broker's PRECONDITION_FAILED for a queue that exists with another type reads
 * `inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received the value 'quorum' of
 * type 'longstr' but current is none` (`none`: a classic queue declared without the argument).
 */
function queueTypeMismatch(error: unknown, queue: string): QueueTypeMismatch | undefined {
  if (replyCode(error) !== 406) return undefined;
  const text = messageOf(error);
  if (!text.includes("inequivalent arg 'x-queue-type'")) return undefined;
  const received = /received (?:the value )?'([^']+)'/.exec(text)?.[1] ?? 'of another type';
  const current = /current is (?:the value )?'?([^' "]+)/.exec(text)?.[1];
  const existing = !current || current === 'none' ? 'classic' : current;
  return new QueueTypeMismatch(queue, received, existing, { cause: error });
}

/**
 * A sharded queue `name` is a consistent-hash exchange `<name>.shards`, bound to the topic
 * exchange with the queue's binding keys, and the queues `<name>.0` … `<name>.<N-1>`, each bound
 * to it with weight 1. The broker hashes the `message_id` property: the
 * same id always lands in the same shard, and adding a shard moves only about 1/N of the ids.
 * Needs the `rabbitmq_consistent_hash_exchange` plugin (ships with RabbitMQ).
 */
export function shardNames(name: string, shards: number): { exchange: string; queues: string[] } {
  return {
    exchange: `${name}.shards`,
    queues: Array.from({ length: shards }, (_, i) => `${name}.${i}`),
  };
}

/** Every queue the topology declares, shards spelled out. */
function declaredQueueNames(topology: Topology): string[] {
  return topology.queues.flatMap((q) => (q.shards ? shardNames(q.name, q.shards).queues : q.name));
}

/**
 * The broker refused a declaration (e.g. the exchange exists with another type, or the user
 * may not configure it). A configuration problem, not a network one: reconnecting will not fix
 * it, so it is logged as an error rather than a warning.
 */
export class TopologyError extends Error {
  override readonly name = 'TopologyError';
}

/** amqplib puts the AMQP reply code (404, 406, 403…) on errors caused by a channel close. */
export function replyCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A channel for a few RPCs. The no-op 'error' listener matters: a channel error with no
 * listener is rethrown inside amqplib's frame handling and can take the whole connection
 * down. The failing RPC rejects with the same error, which is where we handle it.
 */
export async function openScratchChannel(connection: ChannelModel): Promise<Channel> {
  const channel = await connection.createChannel();
  channel.on('error', () => {});
  return channel;
}

/**
 * Not awaited: a close waits for the broker's CloseOk, which never comes if the connection
 * dies meanwhile, and a readiness probe must not hang on that. A channel the broker already
 * closed rejects at once, which is fine.
 */
function closeQuietly(channel: Channel | undefined): void {
  channel?.close().catch(() => {});
}

/**
 * Declares the durable topic exchange, the durable queues and their bindings. Idempotent. A queue
 * that `replaces` an older one unbinds the older one's bindings of the same keys, after its own
 * are in place (no record is unroutable in between): records go to the new queue only, and the
 * old one is left to its consumers; answers what each replaced queue still holds.
 */
export async function assertTopology(
  connection: ChannelModel,
  topology: Topology,
): Promise<ReplacedQueue[]> {
  const channel = await openScratchChannel(connection);
  const replaced: ReplacedQueue[] = [];
  let step = `declaration of exchange '${topology.exchange}' (durable topic)`;
  const replace = async (queue: Topology['queues'][number]): Promise<ReplacedQueue[]> => {
    if (queue.replaces === undefined || queue.replaces === queue.name) return [];
    step = `unbinding of the replaced queue '${queue.replaces}' from exchange '${topology.exchange}'`;
    return [await unbindReplaced(connection, topology.exchange, queue)];
  };
  try {
    await channel.assertExchange(topology.exchange, 'topic', { durable: true });
    for (const queue of topology.queues) {
      // Arguments must match an existing queue's exactly (x-queue-type, x-max-length, dead-lettering…).
      const options = { durable: true, arguments: { ...queueArguments(queue) } };
      if (!queue.shards) {
        step = `declaration of queue '${queue.name}' (durable)`;
        await declareQueue(channel, queue.name, options);
        for (const key of queue.bindingKeys) {
          step = `binding of queue '${queue.name}' to exchange '${topology.exchange}' with key '${key}'`;
          await channel.bindQueue(queue.name, topology.exchange, key);
        }
        replaced.push(...(await replace(queue)));
        continue;
      }
      const shards = shardNames(queue.name, queue.shards);
      step = `declaration of exchange '${shards.exchange}' (durable x-consistent-hash: is the rabbitmq_consistent_hash_exchange plugin enabled?)`;
      await declareShardExchange(connection, channel, queue.name, shards.exchange);
      for (const key of queue.bindingKeys) {
        step = `binding of exchange '${shards.exchange}' to exchange '${topology.exchange}' with key '${key}'`;
        await channel.bindExchange(shards.exchange, topology.exchange, key);
      }
      for (const name of shards.queues) {
        step = `declaration of queue '${name}' (durable)`;
        await declareQueue(channel, name, options);
        step = `binding of queue '${name}' to exchange '${shards.exchange}' (weight 1)`;
        await channel.bindQueue(name, shards.exchange, '1');
      }
      replaced.push(...(await replace(queue)));
    }
    return replaced;
  } catch (error) {
    if (error instanceof QueueTypeMismatch || error instanceof ShardPluginMissing) throw error;
    if (replyCode(error) === undefined) throw error; // connection trouble: the caller reconnects
    throw new TopologyError(`The broker refused the ${step}: ${messageOf(error)}`, {
      cause: error,
    });
  } finally {
    closeQuietly(channel);
  }
}

/**
 * The replaced queue's bindings of the new queue's keys removed, and its count read. On a channel
 * of its own: once the old queue is deleted (drained), the broker answers 404 and closes it.
 */
async function unbindReplaced(
  connection: ChannelModel,
  exchange: string,
  queue: {
    readonly name: string;
    readonly bindingKeys: readonly string[];
    readonly replaces?: string;
  },
): Promise<ReplacedQueue> {
  const name = queue.replaces ?? '';
  const channel = await openScratchChannel(connection);
  try {
    for (const key of queue.bindingKeys) await channel.unbindQueue(name, exchange, key);
    const { messageCount } = await channel.checkQueue(name);
    return { name, replacedBy: queue.name, messages: messageCount };
  } catch (error) {
    if (replyCode(error) === 404) return { name, replacedBy: queue.name };
    throw error;
  } finally {
    closeQuietly(channel);
  }
}

async function declareQueue(
  channel: Channel,
  name: string,
  options: { durable: boolean; arguments: Record<string, unknown> },
): Promise<void> {
  try {
    await channel.assertQueue(name, options);
  } catch (error) {
    throw queueTypeMismatch(error, name) ?? error;
  }
}

/**
 * An unknown exchange type is not a channel error: the broker closes the whole connection
 * (503 COMMAND_INVALID "unknown exchange type 'x-consistent-hash'"), and the declaration itself
 * only rejects with "Channel ended, no reply will be forthcoming". So the connection's own
 * error is what tells a missing plugin apart from a lost connection.
 */
async function declareShardExchange(
  connection: ChannelModel,
  channel: Channel,
  queue: string,
  exchange: string,
): Promise<void> {
  let closedWith: Error | undefined;
  const onError = (error: Error) => {
    closedWith = error;
  };
  connection.on('error', onError);
  try {
    await channel.assertExchange(exchange, 'x-consistent-hash', {
      durable: true,
      arguments: { 'hash-property': 'message_id' },
    });
  } catch (error) {
    // The connection's 'error' comes with the same frame that ends the channel; give it a turn.
    await new Promise((resolve) => setImmediate(resolve));
    const reason = closedWith ?? error;
    if (/unknown exchange type/i.test(messageOf(reason)))
      throw new ShardPluginMissing(queue, brokerNodeOf(connection), { cause: reason });
    throw error;
  } finally {
    connection.off('error', onError);
  }
}

/**
 * Passive checks that the exchange and every declared queue still exist (someone may have
 * deleted them). A failed passive check closes its channel, so a fresh one is opened after
 * each failure. Returns one safe line per problem.
 */
export async function checkTopology(
  connection: ChannelModel,
  topology: Topology,
): Promise<string[]> {
  const checks: Array<[string, (channel: Channel) => Promise<unknown>]> = [
    [`exchange '${topology.exchange}'`, (ch) => ch.checkExchange(topology.exchange)],
    ...topology.queues
      .filter((q) => q.shards)
      .map((q): [string, (channel: Channel) => Promise<unknown>] => {
        const exchange = shardNames(q.name, q.shards ?? 0).exchange;
        return [`exchange '${exchange}'`, (ch) => ch.checkExchange(exchange)];
      }),
    ...declaredQueueNames(topology).map(
      (name): [string, (channel: Channel) => Promise<unknown>] => [
        `queue '${name}'`,
        (ch) => ch.checkQueue(name),
      ],
    ),
  ];
  const problems: string[] = [];
  let channel: Channel | undefined;
  try {
    for (const [what, check] of checks) {
      channel ??= await openScratchChannel(connection);
      try {
        await check(channel);
      } catch (error) {
        channel = undefined; // the broker closed it
        problems.push(
          replyCode(error) === 404
            ? `${what} does not exist on the broker`
            : `${what}: ${messageOf(error)}`,
        );
      }
    }
  } catch (error) {
    problems.push(`could not check the broker topology: ${messageOf(error)}`);
  } finally {
    closeQuietly(channel);
  }
  return problems;
}
