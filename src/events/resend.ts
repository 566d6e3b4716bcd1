/**
 * Events read back from the history, sent again: published to the delivery queue as the
 * warehouse sent them — the same id (so the same `webhook-id`: receivers deduplicate on it),
 * type, business, occurrence time, data, correlation id and message ids. Nothing of a signature
 * is kept or sent from here: a worker signs every attempt afresh, with the endpoint's current
 * secret and the attempt's own `webhook-timestamp`. Used by `events resend`/`recover` and by the
 * partner API's resend (actions.ts).
 */
import type { MessageCopy } from '../broker/confirms.js';
import type { EventEntry } from '../history/store.js';
import { ATTEMPTS_HEADER, ENDPOINT_HEADER } from './retry.js';

/** One event to send again: to every endpoint subscribed now, or to one. */
export interface Resend {
  readonly event: EventEntry;
  /** The endpoint's id as retry copies name it (`x-webhook-endpoint`); absent: matched afresh. */
  readonly endpoint?: string;
}

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
