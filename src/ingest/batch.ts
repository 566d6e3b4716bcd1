/**
 * The contract between the sources and the one `ingest()` flow: what a batch is, where it came
 * from, what an accepted batch answers and how a batch ended. Every source (HTTP, file drops,
 * reprocessing) builds a `Batch`; nothing here depends on how it was received.
 */
import type { Logger } from '../log.js';
import type { Candidate } from '../decode/candidate.js';
import type { FileHalves } from '../decode/file.js';
import type { RecordKind } from '../records/kind.js';
import type { IgnoredFields } from '../records/legacy/ignored-fields.js';
import type { SenderTerms } from '../records/legacy/sender-terms.js';
import type { IngestOutcome } from '../vocabulary.js';
import type { BatchEnds, ConfirmedRecords } from './batch-end.js';

export type { ConfirmedRecords } from './batch-end.js';

export type { Candidate } from '../decode/candidate.js';

/** Where a batch came from: written on every message (the full message format) and every log line of the batch. */
export interface BatchSource {
  /** `http`, `local`, `sftp`, `s3`, `reprocess`. */
  readonly type: string;
  /** The endpoint path, or the pipeline name for a file drop. */
  readonly name: string;
}

interface BatchBase {
  readonly kind: RecordKind;
  /** The authenticated business (HTTP) or the business a pipeline acts for (file drop). */
  readonly businessId: string;
  readonly correlationId: string;
  /**
   * The W3C trace the batch belongs to (its HTTP request, or the try of its file): written on
   * every message as `traceparent` (and `tracestate`) in the full message format. @default none
   */
  readonly trace?: { readonly traceparent: string; readonly tracestate?: string };
  readonly source: BatchSource;
  /** Logger already carrying the batch's context: correlation id, business, kind, and the file for a drop. */
  readonly log: Logger;
  /** More records than this: 413, before anything is published. */
  readonly maxRecords?: number;
  /** Fields that differ between tries of the same input (receipt time): left out of message ids. */
  readonly volatilePaths?: readonly string[];
  /**
   * The batch's id, which its confirmed records carry to `BatchEnds` (history/batch-ends.ts).
   * A dropped file's is its correlation id, kept by a resumed try, so the records of every try
   * belong to one batch. @default a new time-ordered id
   */
  readonly batchId?: string;
  /**
   * A dropped file: its batch ends when a try settles it with a receipt (maybe tries later), and
   * the drop tells `BatchEnds.ended` then; the flow only tells its confirmed records. @default false
   */
  readonly endedBySource?: boolean;
  /**
   * Told each confirmed chunk — message ids with each record's own number and input line — in
   * order (an array batch's once). With it the ids of a large file are not collected in memory,
   * and the returned `messageIds` is empty: the sink has them all. A streamed batch that fails
   * part-way has told some chunks already.
   */
  readonly onConfirmed?: (confirmed: ConfirmedRecords) => Promise<void>;
  /**
   * The body could not be read as records (malformed JSON): the flow ends the batch refused with
   * this error, without validating anything. @default none
   */
  readonly unreadable?: unknown;
  /** Called once every record passed validation, before anything is published (a file's durable state). */
  readonly onValidated?: (recordCount: number) => Promise<void>;
  /** Legacy fields the business's profile says to ignore, noted while decoding: listed in the answer. */
  readonly ignoredFields?: IgnoredFields;
}

/** A batch held in memory (a JSON body): validated once, published at once. */
export interface ArrayBatch extends BatchBase {
  readonly mode: 'array';
  /** Candidate v2 records, as decoded (or converted from a legacy shape). */
  readonly records: readonly unknown[];
  /** For converted (legacy) batches: puts errors in the sender's terms (legacy path, CSV line and column). */
  readonly senderTerms?: SenderTerms;
}

/**
 * A batch too large to hold as objects (a big CSV file): its records are read once, one at a
 * time. The validation pass reads them all before anything is published (all-or-nothing) and
 * keeps each valid record as its ready message in a spool (`spoolFile`); the publish pass reads
 * that spool, not the input again.
 */
export interface StreamBatch extends BatchBase {
  readonly mode: 'stream';
  open(): AsyncIterable<Candidate>;
  /**
   * The same records in two halves, validated at once on two cores when a worker thread is free
   * (`halves.ts`); `open()` reads them in one pass otherwise, or when the halves cannot tell the
   * verdict alone. Needs `spoolFile`. @default one pass
   */
  readonly halves?: FileHalves;
  /**
   * A file (that must not exist yet) for the records ready to publish, between the two passes:
   * for inputs too large to keep twice in memory (a file drop). Removed when `ingest()` ends.
   * @default in memory
   */
  readonly spoolFile?: string;
  /**
   * Stops the batch at the next safe point (a stop of the worker): the validation pass just ends;
   * the publish pass sends no new chunk, waits for the chunks in flight to be confirmed (their ids
   * go to `onConfirmed`), and throws `Interrupted` with the number of records confirmed.
   */
  readonly signal?: AbortSignal;
  /**
   * The first records an earlier, interrupted try of the same input had confirmed: counted and
   * given their ids (so later identical records are numbered as before), not published again.
   * `onConfirmed` gets only those published now; `onSkipped` hears of these. @default 0
   */
  readonly resumeAfter?: number;
  /**
   * Told the skipped records (`resumeAfter`) in order, a chunk at a time, with the ids the earlier
   * try gave them (derived again from the same records) and their lineage facts: a sink rebuilds
   * its list from the bytes instead of reading it back from where the earlier try kept it.
   */
  readonly onSkipped?: (skipped: ConfirmedRecords) => Promise<void>;
  /**
   * Awaited before each chunk is sent. Throwing stops the publish pass: nothing more is sent,
   * the chunks in flight are awaited, and the error is what `ingest()` throws (a worker that
   * lost its claim on a file stops at the next chunk).
   */
  readonly beforeChunk?: () => Promise<void>;
}

export type Batch = ArrayBatch | StreamBatch;

/** The `202` body (spec §2.1). */
export interface BulkResponse {
  success: true;
  recordCount: number;
  messageIds: string[];
  correlationId: string;
  /** v1 fields left out as the business's onboarding profile says (`legacy.unknownFields: ignore`). */
  ignoredFields?: string[];
}

/** How one batch ended (`IngestOutcome`, vocabulary.ts). */
export interface BatchOutcome {
  readonly batch: Batch;
  readonly outcome: IngestOutcome;
  /** Records in the batch (0 when a stream was refused before it was counted). */
  readonly records: number;
  readonly ms: number;
  readonly error?: unknown;
}

/** The one flow every source feeds. */
export interface Ingest {
  (batch: Batch): Promise<BulkResponse>;
  /**
   * The flow's end of every batch, for a source whose batch ends after `ingest()` returns (a
   * dropped file ends when a try settles it: `endedBySource`). @default none (no history)
   */
  readonly ends?: BatchEnds;
}
