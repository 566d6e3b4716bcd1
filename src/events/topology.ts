import type { Channel } from 'amqplib';
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
      retryDelays(config.retrySchedule, deferMs).map((ms) => [ms, retryQueueName(queue, ms)]),
    ),
    deferMs,
  };
}

/**
 * Declares the exchange, the delivery queue bound `#`, the retry queues and the dead-letter
 * queue. Idempotent; run by every worker on every (re)connect and by `events emit`, so a fresh
 * broker needs no manual set-up. Retry queues are classic: they only hold messages for a delay,
 * and the dead-lettering back to a quorum delivery queue is what must not lose them.
 */
export async function assertEventsTopology(
  channel: Channel,
  topology: EventsTopology,
  queueType: EventsConfig['queue']['type'],
): Promise<void> {
  await channel.assertExchange(topology.exchange, 'topic', { durable: true });
  const typed = { durable: true, arguments: { 'x-queue-type': queueType } };
  await channel.assertQueue(topology.queue, typed);
  await channel.bindQueue(topology.queue, topology.exchange, '#');
  await channel.assertQueue(topology.deadQueue, typed);
  for (const [delayMs, name] of topology.retryQueues) {
    await channel.assertQueue(name, {
      durable: true,
      arguments: {
        'x-queue-type': 'classic',
        'x-message-ttl': delayMs,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': topology.queue,
      },
    });
  }
}
