/**
 * Rows as the database gives them (a batch, an event, an attempt) and the scope of a read as its
 * first parameter: shared by the queries that read them (queries.ts, batch-pages.ts, event-pages.ts).
 */
import type { AttemptEntry, BatchEntry, EventEntry, Scope } from './store.js';

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
