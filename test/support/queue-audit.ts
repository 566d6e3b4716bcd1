import { connect } from 'amqplib';

/** One message as it sits in a queue: what a de-duplicating consumer would see. */
export interface QueuedMessage {
  readonly messageId: string;
  readonly body: string;
}

/**
 * Everything in `queue`, read over a connection of its own: as many messages as `checkQueue`
 * counts (exact, unlike the management API), consumed with auto-ack. Only for a queue nothing
 * publishes to any more.
 */
export async function drainQueue(
  url: string,
  queue: string,
  timeoutMs = 30_000,
): Promise<QueuedMessage[]> {
  const connection = await connect(url);
  connection.on('error', () => {});
  let timer: NodeJS.Timeout | undefined;
  try {
    const channel = await connection.createChannel();
    const { messageCount } = await channel.checkQueue(queue);
    const out: QueuedMessage[] = [];
    if (messageCount === 0) return out;
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `read ${out.length} of ${messageCount} messages from ${queue} within ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
      void channel
        .consume(
          queue,
          (message) => {
            if (message === null)
              return reject(new Error(`the broker cancelled the consumer of ${queue}`));
            out.push({
              messageId: String(message.properties.messageId),
              body: message.content.toString('utf8'),
            });
            if (out.length === messageCount) resolve();
          },
          { noAck: true },
        )
        .catch(reject);
    });
    return out;
  } finally {
    clearTimeout(timer);
    await connection.close().catch(() => {});
  }
}

/** What the delivery promise allows and forbids, counted over a queue's contents. */
export interface Audit {
  readonly messages: number;
  readonly distinctIds: number;
  /** Extra copies: messages beyond the first of their id. */
  readonly duplicates: number;
  /** Ids whose copies differ in content (must be none: an id names one record). */
  readonly idsWithDifferentBodies: string[];
  /** Records (by `keyOf` the body) that arrived under more than one id (must be none: duplicates keep their id). */
  readonly recordsUnderSeveralIds: string[];
  /** messageId → body of its (first) copy. */
  readonly bodyOf: ReadonlyMap<string, string>;
}

/** `keyOf` names the business record a body holds (e.g. its shipmentId), to catch a record re-sent under a new id. */
export function auditQueue(
  messages: readonly QueuedMessage[],
  keyOf: (body: string) => string,
): Audit {
  const bodyOf = new Map<string, string>();
  const idsOfRecord = new Map<string, Set<string>>();
  const idsWithDifferentBodies = new Set<string>();
  for (const { messageId, body } of messages) {
    const first = bodyOf.get(messageId);
    if (first === undefined) bodyOf.set(messageId, body);
    else if (first !== body) idsWithDifferentBodies.add(messageId);
    const key = keyOf(body);
    const ids = idsOfRecord.get(key) ?? new Set<string>();
    ids.add(messageId);
    idsOfRecord.set(key, ids);
  }
  return {
    messages: messages.length,
    distinctIds: bodyOf.size,
    duplicates: messages.length - bodyOf.size,
    idsWithDifferentBodies: [...idsWithDifferentBodies],
    recordsUnderSeveralIds: [...idsOfRecord].filter(([, ids]) => ids.size > 1).map(([key]) => key),
    bodyOf,
  };
}
