import type { BulkResponse } from '../../ingest/batch.js';
import type { FailureKind, InputStatus } from '../../vocabulary.js';

/**
 * The durable state of every input of a drop, keyed by the sha256 of its bytes and kept in the
 * drop itself (`.warehouse-ingest/state/<sha256>.json`): where the data is, so it survives
 * restarts, every worker of the drop shares it, and moving a drop moves its history with it.
 * No embedded database: a store that can hold the files can hold their state, with the same
 * atomic whole-file writes (`DropStore.write`), and an operator can read it with `cat`.
 *
 *     received → publishing → published → receipted
 *         ↘ failed (rejected: the input's fault; reprocessing may try again)
 *         ↘ retry-scheduled (transient failure or reprocessing; `nextAttemptAt`)
 *         ↘ dead (gave up after `retry.maxAttempts` attempts; terminal)
 *
 * The transitions are the pure functions of `machine.ts` (the only code that changes a
 * status); reading and writing states is `persist.ts`.
 *
 * `attempts` counts tries that could be the input's fault: rejections, unexpected errors and
 * tries that never finished without the broker confirming any of their records (a crash: the
 * count is raised before work starts, and given back when the next try finds progress). A broker or
 * store outage is nobody's fault in the input: it defers the input without using an attempt.
 * Neither is a stop of the worker: an interrupted try is `retry-scheduled` (due at once) with
 * `resume`, its attempt given back, and the next try publishes only what is left.
 */
/** The `202` body of an accepted input without its ids, which are kept beside the state (`idsName`). */
export type AcceptedSummary = Omit<BulkResponse, 'messageIds'>;

/** One try that did not succeed; the state keeps the last few. */
export interface InputFailure {
  at: string;
  attempt: number;
  reason: string;
  kind: FailureKind;
}

/**
 * How far a try got: its first `confirmed` records are confirmed by the broker. Written after
 * every confirmed chunk (and by a stop), so the next try — after a stop, a crash, or any
 * transient failure — publishes only the records after them; it derives their ids again from
 * the same bytes (message ids are stable) instead of reading them back.
 */
export interface ResumePoint {
  confirmed: number;
  /** The interrupted try's correlation id, carried on: every message of the input shares one. */
  correlationId: string;
}

export interface InputState {
  sha256: string;
  status: InputStatus;
  /** The name the input arrived under (the latest, when the same bytes arrived again). */
  file: string;
  pipeline?: string;
  /** Where the input is in the drop now; absent once deleted (`after.success: delete`). */
  location?: string;
  attempts: number;
  /** First seen, and the last change (ISO 8601, UTC). */
  receivedAt?: string;
  updatedAt?: string;
  /** Set once published; the message ids are in `idsName(sha256)`, one per line. */
  response?: AcceptedSummary;
  /** The latest receipt, and every receipt written for the input, oldest first. */
  receipt?: string;
  receipts?: string[];
  processedAt?: string;
  lastError?: string;
  failures?: InputFailure[];
  /** `retry-scheduled`: not before this time (ISO 8601). */
  nextAttemptAt?: string;
  /** Set while a try's confirmed records wait for the rest to be published (see `ResumePoint`). */
  resume?: ResumePoint;
  /**
   * The records confirmed when the try under way began (`begin`): a try that never finished
   * (`crashed`) and moved `resume.confirmed` past it made progress, and gives its attempt back.
   */
  begunAfter?: number;
  /** Broker or store outages in a row (they do not use attempts). */
  deferrals?: number;
  /** Where a settle in progress puts the input and its receipt (cleared once done): see `SettlePlan`. */
  settling?: SettlePlan;
  /**
   * A rejection (or a give-up) whose receipt is not written yet: set with the status, cleared by
   * the settle. The next try settles it again without a new attempt (an outage cut it short).
   */
  receiptPending?: boolean;
  /** The worker that last changed the state. */
  worker?: string;
  /**
   * Raised by every write; a write must name the version it follows, and is refused when the
   * drop holds another (compare-and-set, see `writeState`): states never go backwards.
   * Absent (0) in states written before versions existed.
   */
  version?: number;
}

/**
 * Where a settle puts the input and its receipt, decided before anything is written and kept in
 * the input's state (`settling`): a worker that dies between the receipt and the move leaves
 * the plan behind, and the next try carries out the same plan — one receipt, not a second one
 * beside it under a time-prefixed name.
 */
export interface SettlePlan {
  readonly success: boolean;
  /** `move`: the folder path; undefined otherwise (delete, keep). */
  readonly moveTo?: string;
  readonly receipt: string;
}

/** The statuses a reprocessing job may select (dead inputs never are). */
export const REPROCESS_STATUSES = ['failed', 'retry-scheduled'] as const;
export type ReprocessStatus = (typeof REPROCESS_STATUSES)[number];

/** Whether a try of these bytes started and never recorded its end (the worker crashed or was killed). */
export const unfinished = (state: InputState) =>
  state.status === 'received' || state.status === 'publishing';
/** Whether these bytes were published: they are never published again. */
export const wasPublished = (state: InputState) =>
  (state.status === 'published' || state.status === 'receipted') && state.response !== undefined;
