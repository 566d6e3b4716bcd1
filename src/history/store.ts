/**
 * The history port: what happened to each batch, record, event and delivery, kept for a
 * retention period and shared by every instance using the same store. One interface,
 * two adapters (`embedded/`: a SQLite file under `dataDirectory`; `postgres/`: a pool on a
 * fleet's database), held to one contract suite.
 *
 * Tenancy is in the signature: every read takes a `Scope`, either one business (a partner's or
 * an operator's question about one business) or the operator's whole view, said explicitly. No
 * read returns another business's rows. Nothing secret is ever written: no column holds a key, a
 * key hash or a webhook secret, and the writes below carry none.
 */
import type { AttemptEnd, CircuitState, DisabledBy, HistoryBatchOutcome } from '../vocabulary.js';
import type { BatchRecord, DayOutcomeCount, EndpointDeliveries, TimeWindow } from './overview.js';

/** Where a record's own number is in the data of the events about it (the event catalog says). */
export interface RecordNumber {
  /** e.g. `sales-order.` */
  readonly typePrefix: string;
  /** e.g. `orderNumber` */
  readonly field: string;
  readonly value: string;
}

/** Whose rows a read may return: one business's, or every business's for an operator. */
export type Scope = { readonly businessId: string } | { readonly operator: true };

/** Where a batch came from: an HTTP endpoint, or a pipeline's dropped file. */
export type BatchSource =
  | { readonly endpoint: string }
  | { readonly pipeline: string; readonly fileName: string };

/** One batch (an HTTP request, one try of a dropped file that settled it), accepted or refused. */
export interface BatchEntry {
  /** Unique per entry (the writer makes it); records point to it. */
  readonly id: string;
  readonly correlationId: string;
  readonly businessId: string;
  readonly source: BatchSource;
  readonly kind: string;
  readonly recordCount: number;
  readonly outcome: HistoryBatchOutcome;
  /** The problem details a refusal answered (or a failure receipt carried). */
  readonly problem?: unknown;
  /** The receipt a dropped file got. */
  readonly receipt?: unknown;
  readonly at: Date;
}

/** The confirmed records of a batch, as parallel arrays (no object per record). */
export interface RecordEntries {
  readonly batchId: string;
  /** Index in the batch (0-based) of the first of these records. */
  readonly first: number;
  readonly businessId: string;
  /** Each record's business key (its own number); `''` when it has none. */
  readonly references: readonly string[];
  readonly messageIds: readonly string[];
  /** Each record's first file line, where known. */
  readonly lines?: ReadonlyArray<number | undefined>;
  readonly at: Date;
}

/** A warehouse event as received. */
export interface EventEntry {
  readonly id: string;
  readonly type: string;
  readonly businessId: string;
  readonly payload: unknown;
  readonly receivedAt: Date;
  /** When it happened (the warehouse's `timestamp`): a resend carries it again. Absent: `receivedAt`. */
  readonly occurredAt?: Date;
  /** The ingest batch and records it answers, when the warehouse sent them (part of the webhook body). */
  readonly correlationId?: string;
  readonly messageIds?: readonly string[];
}

/** One delivery attempt of an event at an endpoint. */
export interface AttemptEntry {
  /** Unique per attempt (the writer makes it), so writing it again after a lost answer adds nothing. */
  readonly id: string;
  readonly eventId: string;
  readonly businessId: string;
  /** The endpoint's id, or its full URL when it has none. */
  readonly endpoint: string;
  readonly at: Date;
  readonly end: AttemptEnd;
  /** The HTTP status, when one came back. */
  readonly status?: number;
  readonly durationMs: number;
  /** The start of the answer's body; the store keeps at most `RESPONSE_EXCERPT_CHARS` of it. */
  readonly responseExcerpt?: string;
  readonly error?: string;
}

/** What every worker knows of an endpoint, shared. */
export interface EndpointStateEntry {
  readonly businessId: string;
  readonly endpoint: string;
  readonly enabled: boolean;
  readonly disabledBy?: DisabledBy;
  readonly failingSince?: Date;
  readonly circuit: CircuitState;
  readonly updatedAt: Date;
}

/** Attempts a list of events shows per event at most: an event retried for days stays one small item. */
export const ATTEMPTS_PER_EVENT = 50;

/** Characters of an answer's body kept per attempt. */
export const RESPONSE_EXCERPT_CHARS = 1024;

/** Everything a writer flushes at once: written in one transaction. */
export interface HistoryWrites {
  readonly batches?: readonly BatchEntry[];
  readonly records?: readonly RecordEntries[];
  readonly events?: readonly EventEntry[];
  readonly attempts?: readonly AttemptEntry[];
  /** Replaces the state of each (business, endpoint) named. */
  readonly endpointStates?: readonly EndpointStateEntry[];
}

/** Rows a write holds: a batch, an event, an attempt, a state is one; a record is one each. */
export function rowsOf(writes: HistoryWrites): number {
  let rows =
    (writes.batches?.length ?? 0) +
    (writes.events?.length ?? 0) +
    (writes.attempts?.length ?? 0) +
    (writes.endpointStates?.length ?? 0);
  for (const records of writes.records ?? []) rows += records.messageIds.length;
  return rows;
}

/** A batch as read back, with its records' message ids in batch order. */
export interface BatchRow extends BatchEntry {
  readonly messageIds: readonly string[];
}

/** Where a record went: its message id, and the batch and line it came in. */
export interface RecordRow {
  readonly businessId: string;
  readonly reference: string;
  readonly messageId: string;
  /** Its index in the batch (0-based, as in the bulk response). */
  readonly index: number;
  readonly line?: number;
  readonly batch: BatchEntry;
}

/** An endpoint's attempts as kept (within their retention): how they ended, and the last few. */
export interface EndpointActivity {
  readonly businessId: string;
  readonly endpoint: string;
  readonly delivered: number;
  /** Attempts that did not deliver (failed, answered 410, or could not be sent). */
  readonly failed: number;
  /** Newest first. */
  readonly lastAttempts: readonly AttemptEntry[];
}

/** What a list of batches is narrowed to; every field optional. */
export interface BatchFilter {
  /** At or after. */
  readonly since?: Date;
  /** Before. */
  readonly until?: Date;
  readonly outcome?: HistoryBatchOutcome;
  readonly kind?: string;
  /** An HTTP endpoint's path (`/api/v2/sales-orders`) or a pipeline's name. */
  readonly source?: string;
}

/** Where a page of batches ends: the next page starts after it (newest first). */
export interface BatchCursor {
  readonly at: Date;
  readonly id: string;
}

export interface BatchPage {
  readonly items: readonly BatchEntry[];
  /** Absent on the last page. */
  readonly next?: BatchCursor;
}

/** What a list of events is narrowed to; every field optional. */
export interface EventFilter {
  readonly type?: string;
  /** Received at or after. */
  readonly since?: Date;
  /** Received before. */
  readonly until?: Date;
}

/** Where a page of events ends: the next page starts after it (newest first, by receipt). */
export interface EventCursor {
  readonly at: Date;
  readonly id: string;
}

/** An event as a list shows it: with its delivery attempts, oldest first. */
export interface EventWithAttempts extends EventEntry {
  readonly attempts: readonly AttemptEntry[];
}

export interface EventPage {
  readonly items: readonly EventWithAttempts[];
  /** Absent on the last page. */
  readonly next?: EventCursor;
}

/** The newest refused batches and undelivered attempts, newest first (the portal's overview). */
export interface LatestFailures {
  readonly batches: readonly BatchEntry[];
  readonly attempts: readonly AttemptEntry[];
}

/** The tables that are pruned, each after its own number of days. Endpoint state is current state, never pruned. */
export const PRUNED_TABLES = ['batches', 'records', 'events', 'attempts'] as const;
export type PrunedTable = (typeof PRUNED_TABLES)[number];

export interface HistoryStore {
  /** `embedded` or `postgres`: for logs and `/readyz`. */
  readonly name: string;
  /** Applies the migrations not applied yet; safe when several instances start at once. */
  open(): Promise<void>;
  /** Writes everything in one transaction; throws `HistoryUnavailable` when the store cannot be reached. */
  write(writes: HistoryWrites): Promise<void>;
  /** The batches of a correlation id (a retried request may share one), oldest first. */
  batches(
    scope: Scope,
    correlationId: string,
    options?: {
      /** Message ids read per batch at most (the first, in batch order). @default all */
      readonly messageIds?: number;
    },
  ): Promise<BatchRow[]>;
  /** Every record with this business key, newest first, at most `limit`. */
  records(scope: Scope, reference: string, limit?: number): Promise<RecordRow[]>;
  /** Batches newest first, `limit` at most, after `after` (the previous page's `next`). */
  listBatches(
    scope: Scope,
    filter: BatchFilter,
    page: { readonly limit: number; readonly after?: BatchCursor },
  ): Promise<BatchPage>;
  /** Events newest first (by receipt) with their attempts, `limit` at most, after `after`. */
  listEvents(
    scope: Scope,
    filter: EventFilter,
    page: { readonly limit: number; readonly after?: EventCursor },
  ): Promise<EventPage>;
  event(scope: Scope, id: string): Promise<EventEntry | undefined>;
  /**
   * The events that answer a record: by any of its message ids, or by its own number in their
   * data (`number`: events of types starting `typePrefix` whose `data[field]` is `value`). The
   * newest 100 at most, oldest first: a record's state is its latest event, however many came.
   */
  eventsAbout(
    scope: Scope,
    messageIds: readonly string[],
    number?: RecordNumber,
  ): Promise<EventEntry[]>;
  /** An event's attempts, oldest first. */
  attempts(scope: Scope, eventId: string): Promise<AttemptEntry[]>;
  /**
   * The events attempted at an endpoint since `since` whose attempts there since then all failed
   * (none `delivered`), oldest first (by occurrence): what `events recover` resends. `endpoints`
   * are the names the endpoint has in the attempts (its id, and its URL from before it had one).
   */
  undeliveredSince(scope: Scope, endpoints: readonly string[], since: Date): Promise<EventEntry[]>;
  endpointStates(scope: Scope): Promise<EndpointStateEntry[]>;
  /** Per endpoint with attempts: their counts and the `last` newest (default 5). */
  endpointActivity(scope: Scope, last?: number): Promise<EndpointActivity[]>;
  /**
   * Batches and their records per UTC day and outcome, for the days that start within the window,
   * oldest day first (overview.ts).
   */
  dailyBatches(scope: Scope, window: TimeWindow): Promise<DayOutcomeCount[]>;
  /** Per endpoint attempted in the window: its events by how they ended, and its attempts. */
  endpointDeliveries(scope: Scope, window: TimeWindow): Promise<EndpointDeliveries[]>;
  /** A batch's records in batch order, the first `limit` (by the batch's id, `BatchEntry.id`). */
  batchRecords(scope: Scope, batchId: string, limit: number): Promise<BatchRecord[]>;
  /** The `limit` newest refused batches and undelivered attempts. */
  latestFailures(scope: Scope, limit: number): Promise<LatestFailures>;
  /** Deletes the rows of each table older than its cut-off; answers how many per table. */
  prune(olderThan: Readonly<Record<PrunedTable, Date>>): Promise<Record<PrunedTable, number>>;
  close(): Promise<void>;
}
