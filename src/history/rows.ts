/**
 * Rows as the database gives them (a batch, an event, an attempt), the scope of a read as its
 * first parameter, and what both adapters make of the rows they read (a page and its cursor, the
 * attempts grouped per event or per endpoint): shared by the PostgreSQL adapter's queries and the
 * embedded adapter's.
 */
import type {
  AttemptEntry,
  BatchEntry,
  BatchPage,
  EndpointActivity,
  EventEntry,
  EventPage,
  Scope,
} from './store.js';

/** `$1` of every read: the business id, or null for the operator's view. */
export const scoped = (scope: Scope) => ('businessId' in scope ? scope.businessId : null);

export interface BatchDbRow {
  id: string;
  correlation_id: string;
  business_id: string;
  endpoint: string | null;
  pipeline: string | null;
  file_name: string | null;
  kind: string;
  record_count: number;
  outcome: BatchEntry['outcome'];
  problem: unknown;
  receipt: unknown;
  at: Date;
  message_ids: string[];
}

export function toBatch(row: BatchDbRow): BatchEntry {
  return {
    id: row.id,
    correlationId: row.correlation_id,
    businessId: row.business_id,
    source:
      row.endpoint === null
        ? { pipeline: row.pipeline ?? '', fileName: row.file_name ?? '' }
        : { endpoint: row.endpoint },
    kind: row.kind,
    recordCount: row.record_count,
    outcome: row.outcome,
    ...(row.problem === null ? {} : { problem: row.problem }),
    ...(row.receipt === null ? {} : { receipt: row.receipt }),
    at: new Date(row.at),
  };
}

export interface EventDbRow {
  id: string;
  type: string;
  business_id: string;
  payload: unknown;
  received_at: Date;
  occurred_at: Date | null;
  correlation_id: string | null;
  message_ids: string[] | null;
}

export const toEvent = (row: EventDbRow): EventEntry => ({
  id: row.id,
  type: row.type,
  businessId: row.business_id,
  payload: row.payload,
  receivedAt: new Date(row.received_at),
  ...(row.occurred_at === null ? {} : { occurredAt: new Date(row.occurred_at) }),
  ...(row.correlation_id === null ? {} : { correlationId: row.correlation_id }),
  ...(row.message_ids === null ? {} : { messageIds: row.message_ids }),
});

export interface AttemptDbRow {
  id: string;
  event_id: string;
  business_id: string;
  endpoint: string;
  at: Date;
  end_as: AttemptEntry['end'];
  status: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

export const toAttempt = (row: AttemptDbRow): AttemptEntry => ({
  id: row.id,
  eventId: row.event_id,
  businessId: row.business_id,
  endpoint: row.endpoint,
  at: new Date(row.at),
  end: row.end_as,
  durationMs: row.duration_ms,
  ...(row.status === null ? {} : { status: row.status }),
  ...(row.response_excerpt === null ? {} : { responseExcerpt: row.response_excerpt }),
  ...(row.error === null ? {} : { error: row.error }),
});

/** A page of batches from the `limit + 1` rows read, newest first: the extra row says another page follows. */
export function batchPage(read: readonly BatchEntry[], limit: number): BatchPage {
  const items = read.slice(0, limit);
  const last = items.at(-1);
  return read.length > limit && last ? { items, next: { at: last.at, id: last.id } } : { items };
}

/**
 * A page of events from the `limit + 1` read, each with its attempts (read for the whole page
 * at once, oldest first per event), and the cursor when another page follows.
 */
export function eventPage(
  read: readonly EventEntry[],
  limit: number,
  attempts: readonly AttemptEntry[],
): EventPage {
  const of = new Map<string, AttemptEntry[]>();
  for (const attempt of attempts) {
    const list = of.get(attempt.eventId);
    if (list) list.push(attempt);
    else of.set(attempt.eventId, [attempt]);
  }
  const items = read.slice(0, limit).map((event) => ({
    ...event,
    attempts: of.get(event.id) ?? [],
  }));
  const last = items.at(-1);
  return read.length > limit && last
    ? { items, next: { at: last.receivedAt, id: last.id } }
    : { items };
}

/** Counts per (business, endpoint) with the last attempts of each (newest first). */
export function activityPerEndpoint(
  counts: readonly { business_id: string; endpoint: string; delivered: number; failed: number }[],
  recent: readonly AttemptEntry[],
): EndpointActivity[] {
  const key = (businessId: string, endpoint: string) => `${businessId}\n${endpoint}`;
  const lastOf = new Map<string, AttemptEntry[]>();
  for (const attempt of recent) {
    const k = key(attempt.businessId, attempt.endpoint);
    const list = lastOf.get(k);
    if (list) list.push(attempt);
    else lastOf.set(k, [attempt]);
  }
  return counts.map((row) => ({
    businessId: row.business_id,
    endpoint: row.endpoint,
    delivered: row.delivered,
    failed: row.failed,
    lastAttempts: lastOf.get(key(row.business_id, row.endpoint)) ?? [],
  }));
}
