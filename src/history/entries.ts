/**
 * What the sources hand the history, as rows: an HTTP batch (accepted with its confirmed
 * records, or refused with its problem details) and a dropped file's outcome with its receipt.
 * Structural types only (the ingest flow's `ConfirmedRecords` fits `Confirmed`), so the history
 * imports nothing of the ingest flow.
 */
import { timeOrderedId } from '../ids.js';
import type { BatchEntry, HistoryWrites, RecordEntries } from './store.js';

/** Confirmed records as the pipeline reports them: parallel arrays from index `first`. */
export interface Confirmed {
  readonly first: number;
  readonly messageIds: readonly string[];
  readonly references: readonly string[];
  readonly lines?: ReadonlyArray<number | undefined>;
}

/** A batch as a source knows it: the entry, its id made here unless the source has one. */
export type BatchFacts = Omit<BatchEntry, 'id'> & {
  /** @default a new UUID; a dropped file's is its correlation id, kept by a resumed try */
  readonly id?: string;
};

/** One batch and its confirmed records. */
export function batchWrites(
  facts: BatchFacts,
  confirmed: readonly Confirmed[] = [],
): HistoryWrites {
  // Every field named, no rest or spread: this runs for every HTTP request with the history on.
  const id = facts.id ?? timeOrderedId();
  const batch: BatchEntry = {
    id,
    correlationId: facts.correlationId,
    businessId: facts.businessId,
    source: facts.source,
    kind: facts.kind,
    recordCount: facts.recordCount,
    outcome: facts.outcome,
    problem: facts.problem,
    receipt: facts.receipt,
    at: facts.at,
  };
  return { batches: [batch], records: recordRows(id, facts.businessId, facts.at, confirmed) };
}

/** Confirmed records of a batch whose row comes apart (a dropped file's, chunk by chunk). */
export function recordWrites(
  batchId: string,
  businessId: string,
  at: Date,
  confirmed: readonly Confirmed[],
): HistoryWrites & { records: NonNullable<HistoryWrites['records']> } {
  return { records: recordRows(batchId, businessId, at, confirmed) };
}

function recordRows(
  batchId: string,
  businessId: string,
  at: Date,
  confirmed: readonly Confirmed[],
): RecordEntries[] {
  return confirmed.map((records) => ({
    batchId,
    businessId,
    first: records.first,
    references: records.references,
    messageIds: records.messageIds,
    lines: records.lines,
    at,
  }));
}
