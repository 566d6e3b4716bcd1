import type { Channel, Options } from 'amqplib';
import type { EventsConfig } from './config.js';
import { deadQueueName, deferDelay, retryDelays, retryQueueName } from './retry.js';

export interface EventsTopology {
  readonly exchange: string;
  readonly queue: string;
  readonly deadQueue: string;
  /** Retry (and defer) queues by delay in ms. */
  readonly retryQueues: ReadonlyMap<number, string>;
  readonly deferMs: number;
}

export function eventsTopology(config: EventsConfig): EventsTopology {
  const queue = config.queue.name;
  const deferMs = deferDelay(config.deliveryTimeoutMs);
  return {
    exchange: config.exchange,
    queue,
    deadQueue: deadQueueName(queue),
    retryQueues: new Map(
      retryDelays(config.retrySchedule, deferMs).map((ms) => [
        ms,
        retryQueueName(queue, ms, config.queue.type),
      ]),
    ),
    deferMs,
  };
}

/**
 * Declares the exchange, the delivery queue bound `#`, the retry queues and the dead-letter
 * queue. Idempotent; run by every worker on every (re)connect and by `events emit`, so a fresh
 * broker needs no manual set-up. The retry queues have the delivery queue's type: with quorum
 * (the default) they are replicated like it, and dead-letter back to it at least once
 * (`x-dead-letter-strategy: at-least-once`, which needs `x-overflow: reject-publish`), so a node
 * loss neither stops parking nor loses a parked event.
 *
 * With classic queues, a retry queue lives on one node. While that node is down the broker
 * refuses to declare it (404 "home node … is down or inaccessible"), which would stop every
 * worker from consuming until the node is back. So such a refusal is tolerated (each retry queue
 * is declared on a channel of its own, `scratch`) and the names are returned for the caller to
 * log: a park to one of them fails meanwhile, and the event is redelivered, never lost.
 */
export async function assertEventsTopology(
  channel: Channel,
  topology: EventsTopology,
  queueType: EventsConfig['queue']['type'],
  scratch: () => Promise<Channel>,
): Promise<string[]> {
  await channel.assertExchange(topology.exchange, 'topic', { durable: true });
  const typed = { durable: true, arguments: { 'x-queue-type': queueType } };
  await channel.assertQueue(topology.queue, typed);
  await channel.bindQueue(topology.queue, topology.exchange, '#');
  await channel.assertQueue(topology.deadQueue, typed);
  const unavailable: string[] = [];
  for (const [delayMs, name] of topology.retryQueues) {
    const retry = {
      'x-message-ttl': delayMs,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': topology.queue,
    };
    if (queueType === 'quorum') {
      await channel.assertQueue(name, {
        durable: true,
        arguments: {
          'x-queue-type': 'quorum',
          ...retry,
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        },
      });
      continue;
    }
    const down = await assertOneNodeQueue(scratch, name, {
      durable: true,
      arguments: { 'x-queue-type': 'classic', ...retry },
    });
    if (down) unavailable.push(name);
  }
  return unavailable;
}

/**
 * Declares a classic queue on a channel of its own; true when the broker says its home node is
 * down (the queue exists, on a node that cannot be reached now). Any other refusal throws.
 */
export async function assertOneNodeQueue(
  scratch: () => Promise<Channel>,
  name: string,
  options: Options.AssertQueue,
): Promise<boolean> {
  const channel = await scratch();
  channel.on('error', () => undefined);
  try {
    await channel.assertQueue(name, options);
    channel.close().catch(() => undefined);
    return false;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 404 && /home node .* is down or inaccessible/.test((error as Error).message))
      return true;
    throw error;
  }
}
