/**
 * The outcome and status words of both halves, defined once, each with one meaning. Receipts,
 * input states, metrics labels, log lines and the command line take their words from here; a
 * word that means something else somewhere else gets another word. Imports nothing.
 *
 * Words shared between lists mean the same everywhere:
 * - `accepted` — every record validated, published and confirmed by the broker.
 * - `rejected` — the input's (or event's) own fault: it can never pass as it is; never retried on its own.
 * - `unavailable` — a part we depend on (broker, drop store, the worker's disk) was not there;
 *   nobody's fault in the input; tried again without using an attempt.
 * - `deferred` — postponed without using an attempt (an outage, an endpoint cooling down).
 * - `failed` — ended without success: an input settled as a failure, an attempt that did not deliver.
 * - `dead` — given up on: not tried again on its own (a dead input, a dead-lettered event).
 * - `interrupted` — the worker stopped; what was done is kept and the rest follows.
 * - `validated` — every record passed validation (in the sandbox that is the end: nothing is
 *   published; an input's state then says `publishing`).
 * - `arriving` — a file in a drop still being uploaded (its size or time still changes, or its
 *   marker is missing): not an input yet.
 * - `missing` — a file no longer where its state says; `gone` is kept for an endpoint that
 *   answered 410.
 */

/** How a batch ends — an HTTP request, or one try of a dropped file. Metrics label batches with it. */
export const INGEST_OUTCOMES = ['accepted', 'rejected', 'unavailable', 'error'] as const;
/**
 * - `accepted`, `rejected`, `unavailable`: as above (`unavailable` answers 503).
 * - `error`: ours — a bug, a refused permission, anything unexpected (500); a dropped file's try
 *   uses an attempt.
 */
export type IngestOutcome = (typeof INGEST_OUTCOMES)[number];

/**
 * What a receipt says (partners read these; documented JSON values, never renamed):
 * - `accepted`; `rejected`;
 * - `validated`: the sandbox — every record passed, nothing was published;
 * - `duplicate`: these bytes were accepted before (under another name, or after their receipt);
 *   not published again;
 * - `dead`: given up on after `retry.maxAttempts` tries.
 */
export const RECEIPT_OUTCOMES = ['accepted', 'validated', 'rejected', 'duplicate', 'dead'] as const;
export type ReceiptOutcome = (typeof RECEIPT_OUTCOMES)[number];

/**
 * How one try of a dropped file ends: a receipt outcome when the try settled the file, or why it
 * left no receipt — `retried` (an outage or an error of ours: the file goes back and is tried
 * again), `skipped` (another worker has the file now), `interrupted` (the worker is stopping;
 * what was confirmed is in the state's `resume`).
 */
export type TryOutcome = ReceiptOutcome | 'retried' | 'skipped' | 'interrupted';

/** A try as the runner saw it: also `not-due` — the input's state schedules its next try later. */
export type HandledOutcome = TryOutcome | 'not-due';

/**
 * An input reprocessed by hand: a try's outcome (one not due counts as `retried`), or `missing` —
 * its file is no longer where its state says (deleted, moved by hand); reported and left alone.
 */
export type ReprocessOutcome = TryOutcome | 'missing';

/**
 * The durable status of a dropped input (drops/state/input-state.ts):
 * - `received`: a try took it and counted its attempt;
 * - `publishing`: every record passed; records are being published (a resume point follows
 *   each confirmed chunk) — stored as `validated` by earlier versions, which is read as this;
 * - `published`: every record confirmed; the receipt follows;
 * - `receipted`: settled with a success receipt (terminal unless reprocessed);
 * - `failed`: settled as a failure — rejected (the input's fault); reprocessing may try again;
 * - `retry-scheduled`: tried again at `nextAttemptAt`;
 * - `dead`: given up on (terminal).
 */
export const INPUT_STATUSES = [
  'received',
  'publishing',
  'published',
  'receipted',
  'failed',
  'retry-scheduled',
  'dead',
] as const;
export type InputStatus = (typeof INPUT_STATUSES)[number];

/**
 * Why a try did not succeed, as an input's state keeps it: `rejected`, `unavailable`, `error`
 * (as in `IngestOutcome`), `unfinished` (a try that never recorded its end: a crash or a kill),
 * `interrupted`.
 */
export type FailureKind = Exclude<IngestOutcome, 'accepted'> | 'unfinished' | 'interrupted';

/**
 * What happened to one event for one endpoint (or, for `sandbox` and `unsubscribed`, for its
 * business): `delivered`; `retrying` — an attempt failed, a retry is parked; `deferred` — the
 * endpoint is cooling down, no attempt made; `dead` — dead-lettered; `gone` — the endpoint
 * answered 410 and is disabled; `sandbox` — the sandbox sends nothing; `unsubscribed` — no
 * endpoint of the business wants this type.
 */
export const DELIVERY_OUTCOMES = [
  'delivered',
  'retrying',
  'deferred',
  'dead',
  'gone',
  'sandbox',
  'unsubscribed',
] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/**
 * How one attempt at a destination ended: `delivered`; `failed` (tried again later); `gone` (410);
 * `rejected` (the destination can never take this event: a header or name it cannot carry);
 * `aborted` (the receiver answered `webhook-delivery: abort-message`: no more attempts of this event).
 */
export const ATTEMPT_ENDS = ['delivered', 'failed', 'gone', 'rejected', 'aborted'] as const;
export type AttemptEnd = (typeof ATTEMPT_ENDS)[number];

/** How a destination's endpoint looks to this worker: `failing` (its last attempt failed), `backed-off` (cooling down), `disabled` (410). */
export type EndpointCondition = 'failing' | 'backed-off' | 'disabled';

/** An outbound file written (`written`) or found already there from an earlier attempt (`existing`). */
export type WriteOutcome = 'written' | 'existing';

/**
 * Why an event can never be delivered, found while reading it (before any destination is tried):
 * a field it needs is missing or cannot be carried (`missing-id`, `invalid-id`, `missing-type`,
 * `missing-business`, `invalid-timestamp`), its body is not JSON or nests too deep (`not-json`,
 * `too-deep`), or it names a business this service does not serve (`unknown-business`).
 */
export const MALFORMED_REASONS = [
  'missing-id',
  'invalid-id',
  'missing-type',
  'missing-business',
  'invalid-timestamp',
  'not-json',
  'too-deep',
  'unknown-business',
] as const;
export type MalformedReason = (typeof MALFORMED_REASONS)[number];

/**
 * Why an event was dead-lettered (header `x-dead-reason`). Besides a malformed event:
 * `event-rejected` — a destination can never take this event; `unhandled` — handling it failed
 * unexpectedly (a defect: the detail says where); `attempts-exhausted`; `endpoint-gone` —
 * answered 410 (or disabled after one); `endpoint-disabled` — disabled by an operator
 * (`events disable`); `endpoint-removed` — a retry for an endpoint no longer configured (removed,
 * disabled, or its URL changed without an `id`); `receiver-aborted` — the receiver answered
 * `webhook-delivery: abort-message` (this one event, not the endpoint).
 */
export const DEAD_REASONS = [
  ...MALFORMED_REASONS,
  'event-rejected',
  'unhandled',
  'attempts-exhausted',
  'endpoint-gone',
  'endpoint-disabled',
  'endpoint-removed',
  'receiver-aborted',
] as const;
export type DeadReason = (typeof DEAD_REASONS)[number];

/**
 * How a batch ends as the history keeps it: an HTTP batch's `IngestOutcome`, or the receipt
 * outcome a dropped file was settled with (`validated`, `duplicate`, `dead` besides).
 */
export type HistoryBatchOutcome = IngestOutcome | ReceiptOutcome;
/** Every outcome a batch in the history may have (a filter of the partner API). */
export const HISTORY_BATCH_OUTCOMES: readonly HistoryBatchOutcome[] = [
  ...new Set([...INGEST_OUTCOMES, ...RECEIPT_OUTCOMES]),
];

/**
 * The outcomes of a batch counted as refused (the portal's overview): its records were not taken
 * (`rejected`, `dead`), not yet (`unavailable`), or something of ours failed (`error`). The
 * others (`accepted`, `validated`, `duplicate`: already taken) count as accepted.
 */
export const REFUSED_BATCH_OUTCOMES = ['rejected', 'unavailable', 'error', 'dead'] as const;

/** Who disabled an endpoint: `gone` — it answered 410; `operator` — `events disable`. */
export type DisabledBy = 'gone' | 'operator';

/** The circuit of an endpoint as the history keeps it (events/state/circuit.ts): closed, open, half-open. */
export type CircuitState = 'closed' | 'open' | 'half-open';
