import type { Channel, ChannelModel } from 'amqplib';

/** What the publisher declares on every (re)connect, and what readiness checks still exists. */
export interface Topology {
  readonly exchange: string;
  readonly queues: ReadonlyArray<{
    readonly name: string;
    readonly bindingKeys: readonly string[];
    readonly arguments?: Readonly<Record<string, unknown>>;
  }>;
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

/** Declares the durable topic exchange, the durable queues and their bindings. Idempotent. */
export async function assertTopology(connection: ChannelModel, topology: Topology): Promise<void> {
  const channel = await openScratchChannel(connection);
  let step = `declaration of exchange '${topology.exchange}' (durable topic)`;
  try {
    await channel.assertExchange(topology.exchange, 'topic', { durable: true });
    for (const queue of topology.queues) {
      step = `declaration of queue '${queue.name}' (durable)`;
      // Arguments must match an existing queue's exactly (x-queue-type, x-max-length, dead-lettering…).
      await channel.assertQueue(queue.name, {
        durable: true,
        ...(queue.arguments ? { arguments: { ...queue.arguments } } : {}),
      });
      for (const key of queue.bindingKeys) {
        step = `binding of queue '${queue.name}' to exchange '${topology.exchange}' with key '${key}'`;
        await channel.bindQueue(queue.name, topology.exchange, key);
      }
    }
  } catch (error) {
    if (replyCode(error) === undefined) throw error; // connection trouble: the caller reconnects
    throw new TopologyError(`The broker refused the ${step}: ${messageOf(error)}`, {
      cause: error,
    });
  } finally {
    closeQuietly(channel);
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
    ...topology.queues.map((q): [string, (channel: Channel) => Promise<unknown>] => [
      `queue '${q.name}'`,
      (ch) => ch.checkQueue(q.name),
    ]),
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
