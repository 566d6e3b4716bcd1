import type { Channel, GetMessage } from 'amqplib';

/** Messages one look at a queue takes at most: a dead-letter queue of millions stays bounded. */
export const MAX_BROWSED = 1_000_000;

/**
 * Looks at (never takes) a queue's messages: each fetched unacknowledged until the queue has
 * nothing more to give (a message is given once while unacknowledged) or `max` — not up to
 * `checkQueue`'s count, which lags a message a quorum queue has just confirmed. Closing the
 * channel afterwards puts them all back (a parked message keeps its expiry).
 */
export async function browseQueue(
  channel: Channel,
  queue: string,
  max = MAX_BROWSED,
): Promise<GetMessage[]> {
  const messages: GetMessage[] = [];
  while (messages.length < max) {
    const message = await channel.get(queue, { noAck: false });
    if (message === false) break;
    messages.push(message);
  }
  return messages;
}
