/**
 * The one end of every batch. Every source's batch — an HTTP request, a dropped file of any
 * store under `serve` or `run --once`, a reprocessed file — ends here exactly once, accepted,
 * refused or unavailable, with what the history keeps of it. The ingest flow calls it when
 * `ingest()` returns or throws; a dropped file's batch ends later, when its try settles it with
 * a receipt (a try that only failed for an outage is tried again, not ended), so the drop calls
 * the same port then (`Batch.endedBySource`). The history's writer implements it
 * (history/batch-ends.ts); nothing else writes a batch to the history.
 */
import type { HistoryBatchOutcome } from '../vocabulary.js';

/** Confirmed records of a batch, as parallel arrays in batch order (no object per record). */
export interface ConfirmedRecords {
  /** Index in the batch (0-based, as in the bulk response) of the first of these records. */
  readonly first: number;
  readonly messageIds: readonly string[];
  /** Each record's own number (`kind.referencePath`); `''` when it has none. */
  readonly references: readonly string[];
  /** Each record's first input line, where the decoder knows it (CSV); absent for JSON. */
  readonly lines?: ReadonlyArray<number | undefined>;
}

/** Where an ended batch came from. */
export interface BatchEndSource {
  /** `http`, `local`, `sftp`, `s3`, `reprocess`. */
  readonly type: string;
  /** The endpoint path, or the pipeline name for a file drop. */
  readonly name: string;
  /** The dropped file's name. */
  readonly file?: string;
}

/** A batch that ended, as every source reports it. */
export interface BatchEnd {
  /** The batch's own id: records told through `confirmed` carry it. */
  readonly batchId: string;
  readonly correlationId: string;
  readonly businessId: string;
  readonly kind: string;
  readonly source: BatchEndSource;
  /** An HTTP batch's `IngestOutcome`, or the receipt outcome a dropped file was settled with. */
  readonly outcome: HistoryBatchOutcome;
  readonly recordCount: number;
  /** The problem details a refused batch answered (or its failure receipt carried). */
  readonly problem?: unknown;
  /** The receipt a dropped file got. */
  readonly receipt?: unknown;
  readonly at: Date;
  /** Its confirmed records, when they were not told chunk by chunk (an array batch's). */
  readonly records?: readonly ConfirmedRecords[];
}

/** The port: told each batch's confirmed records as the broker confirms them, then its end. */
export interface BatchEnds {
  /**
   * Records of a streamed batch the broker confirmed, one chunk at a time (a file of a million
   * lines is never held whole); the end follows. Records an earlier try of the same file
   * confirmed are told again by a resumed try: the sink keeps each (batch, position) once.
   */
  confirmed(batchId: string, businessId: string, records: ConfirmedRecords): void;
  /** Exactly once for every batch that ends. Queues, never waits and never throws. */
  ended(end: BatchEnd): void;
}
