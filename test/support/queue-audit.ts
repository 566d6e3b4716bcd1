import { connect } from 'amqplib';

/** One message as it sits in a queue: what a de-duplicating consumer would see. */
export interface QueuedMessage {
  readonly messageId: string;
  readonly body: string;
}

/** Everything in `queue` (drained with basic.get, auto-ack), read over a connection of its own. */
export async function drainQueue(url: string, queue: string): Promise<QueuedMessage[]> {
  const connection = await connect(url);
  connection.on('error', () => {});
  try {
    const channel = await connection.createChannel();
    const out: QueuedMessage[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return out;
      out.push({ messageId: String(message.properties.messageId), body: message.content.toString('utf8') });
    }
  } finally {
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
export function auditQueue(messages: readonly QueuedMessage[], keyOf: (body: string) => string): Audit {
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
