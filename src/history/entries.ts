/**
 * What the sources hand the history, as rows: an HTTP batch (accepted with its confirmed
 * records, or refused with its problem details) and a dropped file's outcome with its receipt.
 * Structural types only (the pipeline's `ConfirmedRecords` fits `Confirmed`), so the history
 * imports nothing of the pipeline.
 */
import { randomUUID } from 'node:crypto';
import type { HistoryBatchOutcome } from '../vocabulary.js';
import type { BatchSource, HistoryWrites } from './store.js';

/** Confirmed records as the pipeline reports them: parallel arrays from index `first`. */
export interface Confirmed {
  readonly first: number;
  readonly messageIds: readonly string[];
  readonly references: readonly string[];
  readonly lines?: ReadonlyArray<number | undefined>;
}

export interface BatchFacts {
  readonly correlationId: string;
  readonly businessId: string;
  readonly source: BatchSource;
  readonly kind: string;
  readonly recordCount: number;
  readonly outcome: HistoryBatchOutcome;
  readonly problem?: unknown;
  readonly receipt?: unknown;
  readonly at: Date;
}

/** One batch and its confirmed records, under a new batch id. */
export function batchWrites(
  facts: BatchFacts,
  confirmed: readonly Confirmed[] = [],
): HistoryWrites {
  const id = randomUUID();
  return {
    batches: [{ id, ...facts }],
    records: confirmed.map((records) => ({
      batchId: id,
      businessId: facts.businessId,
      first: records.first,
      references: records.references,
      messageIds: records.messageIds,
      ...(records.lines && { lines: records.lines }),
      at: facts.at,
    })),
  };
}
