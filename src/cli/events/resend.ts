/**
 * Publishes events read back from the history to the delivery queue again, as the warehouse
 * sent them: the same id (so the same `webhook-id`: receivers deduplicate on it), type, business,
 * occurrence time, data, correlation id and message ids. Nothing of a signature is kept or sent
 * from here: a worker signs every attempt afresh, with the endpoint's current secret and the
 * attempt's own `webhook-timestamp`.
 */
import { confirmedChannel, type MessageCopy } from '../../broker/confirms.js';
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig } from '../../events/config.js';
import { ATTEMPTS_HEADER, ENDPOINT_HEADER } from '../../events/retry.js';
import { eventsTopology } from '../../events/topology.js';
import type { EventEntry } from '../../history/store.js';

/** One event to send again: to every endpoint subscribed now, or to one. */
export interface Resend {
  readonly event: EventEntry;
  /** The endpoint's id as retry copies name it (`x-webhook-endpoint`); absent: matched afresh. */
  readonly endpoint?: string;
}

export interface ResendOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly resends: readonly Resend[];
  /** Called once each event is confirmed in the delivery queue. */
  readonly onResent?: (resend: Resend, done: number, total: number) => void;
}

/** Confirms awaited together per chunk (one at a time costs ~10×), progress reported per chunk. */
const CHUNK = 50;

/** The message the warehouse published, rebuilt from the history's row. */
export function resendCopy(queue: string, { event, endpoint }: Resend): MessageCopy {
  const headers: Record<string, unknown> = { 'business-id': event.businessId };
  if (event.correlationId) headers['correlation-id'] = event.correlationId;
  if (event.messageIds?.length) headers['message-ids'] = [...event.messageIds];
  // A fresh start at that endpoint: its whole retry schedule, as `events replay` gives.
  if (endpoint !== undefined)
    Object.assign(headers, { [ENDPOINT_HEADER]: endpoint, [ATTEMPTS_HEADER]: 0 });
  return {
    messageId: event.id,
    routingKey: queue,
    body: Buffer.from(JSON.stringify(event.payload ?? {})),
    properties: {
      messageId: event.id,
      type: event.type,
      timestamp: Math.floor((event.occurredAt ?? event.receivedAt).getTime() / 1000),
      contentType: 'application/json',
      headers,
    },
  };
}

/**
 * Publishes every resend to the delivery queue (the default exchange, as retries come back),
 * with confirms and `mandatory`: resolves once the broker holds them all; a delivery queue that
 * does not exist returns them and fails the call (`PublishFailed`).
 */
export async function resendEvents(options: ResendOptions): Promise<number> {
  const { queue } = eventsTopology(options.events);
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events resend',
  });
  try {
    const publishing = confirmedChannel(await connection.createConfirmChannel(), '', 30_000);
    const total = options.resends.length;
    for (let from = 0; from < total; from += CHUNK) {
      const chunk = options.resends.slice(from, from + CHUNK);
      await publishing.publishCopies(chunk.map((resend) => resendCopy(queue, resend)));
      for (const [i, resend] of chunk.entries()) options.onResent?.(resend, from + i + 1, total);
    }
    return total;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
