/**
 * The history's reads for the portal's overview and batch page: batches and records per day, each
 * endpoint's deliveries over a window, and the latest failures. Counted by the store (a GROUP BY
 * on an index), never by loading rows into JavaScript: the overview costs the same few
 * milliseconds at 100,000 batches as at ten (docs/performance.md).
 */
import { type HistoryBatchOutcome, REFUSED_BATCH_OUTCOMES } from '../vocabulary.js';

/** A span of time read: from `since` (included) to `until` (excluded). */
export interface TimeWindow {
  readonly since: Date;
  readonly until: Date;
}

/** Batches of one outcome on one day (UTC), and the records they carried. */
export interface DayOutcomeCount {
  /** The day, `YYYY-MM-DD` (UTC). */
  readonly day: string;
  readonly outcome: HistoryBatchOutcome;
  readonly batches: number;
  readonly records: number;
}

/**
 * One endpoint's deliveries in a window. Each event attempted there counts once, by how its
 * latest attempt in the window ended: `delivered`; `retrying` (it failed, and the worker tries
 * again on its schedule); `dead` (gone, rejected or aborted: no attempt follows). An event whose
 * retries ran out ended on a failed attempt the history cannot tell from one retried later: it
 * counts as retrying (the operator's dead-letter page lists it).
 */
export interface EndpointDeliveries {
  readonly businessId: string;
  /** The endpoint's id, or its URL when it has none (as attempts name it). */
  readonly endpoint: string;
  readonly delivered: number;
  readonly retrying: number;
  readonly dead: number;
  /** Every attempt in the window, and those that delivered: the success rate. */
  readonly attempts: number;
  readonly deliveredAttempts: number;
}

/** The refused outcomes as an SQL list (constants of ours, never a caller's text). */
export const REFUSED_SQL = REFUSED_BATCH_OUTCOMES.map((outcome) => `'${outcome}'`).join(', ');

const DAY_MS = 86_400_000;

/** The number of the first day (since 1970-01-01, UTC) that starts at or after `date`. */
export function dayNumber(date: Date): number {
  return Math.ceil(date.getTime() / DAY_MS);
}

/** A day's number (days since 1970-01-01, UTC) as `YYYY-MM-DD`. */
export function dayOf(dayNumber: number): string {
  return new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
}

/** What both adapters read per (day number, outcome): the same shape, as numbers. */
export interface DayOutcomeDbRow {
  day: number;
  outcome: HistoryBatchOutcome;
  batches: number;
  records: number;
}

export const toDayOutcome = (row: DayOutcomeDbRow): DayOutcomeCount => ({
  day: dayOf(Number(row.day)),
  outcome: row.outcome,
  batches: Number(row.batches),
  records: Number(row.records),
});

export interface DeliveriesDbRow {
  business_id: string;
  endpoint: string;
  delivered: number;
  retrying: number;
  dead: number;
  attempts: number;
  delivered_attempts: number;
}

export const toDeliveries = (row: DeliveriesDbRow): EndpointDeliveries => ({
  businessId: row.business_id,
  endpoint: row.endpoint,
  delivered: Number(row.delivered),
  retrying: Number(row.retrying),
  dead: Number(row.dead),
  attempts: Number(row.attempts),
  deliveredAttempts: Number(row.delivered_attempts),
});

/** One record of a batch, as the batch page lists it. */
export interface BatchRecord {
  /** Its index in the batch (0-based). */
  readonly index: number;
  /** Its business key; `''` when it has none. */
  readonly reference: string;
  readonly messageId: string;
  readonly line?: number;
}

export interface BatchRecordDbRow {
  position: number;
  reference: string;
  message_id: string;
  line: number | null;
}

export const toBatchRecord = (row: BatchRecordDbRow): BatchRecord => ({
  index: row.position,
  reference: row.reference,
  messageId: row.message_id,
  ...(row.line === null ? {} : { line: row.line }),
});
