import {
  wasPublished,
  type AcceptedSummary,
  type InputFailure,
  type InputState,
  type SettlePlan,
} from './input-state.js';
import type { FailureKind, InputStatus } from '../../vocabulary.js';

/**
 * The input state machine, as pure functions: each takes the current `InputState` (and the facts
 * of the step) and returns the next one, or throws `IllegalTransition` when the step cannot
 * happen from there. No I/O and no clock: times come in as arguments, so every transition is
 * tested alone (test/drops/state/machine.test.ts). The file processor is the only caller that
 * changes a status, always through these.
 *
 *     arrived ─ begin ─→ received ─ validated ─→ publishing ─ published ─→ published ─ settled ─→ receipted
 *                          │  └───────────────────────┴─ rejected ─→ failed (or dead: no attempts left)
 *                          ├─ deferred (outage: attempt given back) ─────→ retry-scheduled
 *                          ├─ retryScheduled (our error: attempt kept) ──→ retry-scheduled
 *                          ├─ interrupted (a stop: attempt given back) ──→ retry-scheduled (+ resume)
 *                          ├─ crashed (found by the next try: attempt ───→ retry-scheduled (+ resume)
 *                          │    given back if it confirmed records, kept if not)
 *                          └─ dead (attempts used up) ───────────────────→ dead
 *
 * Transitions are named by what happened (`validated`: every record passed), statuses by where
 * the input is (`publishing`). While `publishing`, `progressed` records each confirmed chunk (the resume point, `resume`), which
 * every later try of the input keeps until it is published or rejected.
 */

/** A step the state machine does not allow from the input's current status: a bug, never the input's fault. */
export class IllegalTransition extends Error {
  override readonly name = 'IllegalTransition';
  constructor(
    readonly from: InputStatus,
    readonly step: string,
  ) {
    super(`Input state machine: ${step} is not allowed from ${from}`);
  }
}

/** The failures a state keeps (the last ones). */
export const KEPT_FAILURES = 10;

/** A try is under way: its attempt is counted and its end not yet recorded. */
const TRYING: readonly InputStatus[] = ['received', 'publishing'];

function from(state: InputState, allowed: readonly InputStatus[], step: string): void {
  if (!allowed.includes(state.status)) throw new IllegalTransition(state.status, step);
}

/** The state with one more failure noted (the last `KEPT_FAILURES` are kept). */
export function withFailure(
  state: InputState,
  failure: { kind: FailureKind; attempt: number; reason: string },
  at: string,
): InputState {
  const noted: InputFailure = { at, ...failure };
  const failures = [...(state.failures ?? []), noted].slice(-KEPT_FAILURES);
  return { ...state, failures, lastError: failure.reason };
}

/** What a try knows of the bytes in hand before it reads their history. */
export interface Arrival {
  readonly sha256: string;
  /** The name the bytes arrived under. */
  readonly file: string;
  readonly pipeline: string;
  /** Where the file rests during the try. */
  readonly location: string;
  /** When this try took the file (ISO 8601). */
  readonly at: string;
}

/**
 * The state a try starts from: these bytes as they arrived now, with what earlier tries left
 * (attempts, failures, the resume point). An earlier try that never recorded its end is noted as
 * `unfinished`; its attempt stays used. Not counted yet: see `begin`. Bytes already published
 * never come here (the settle of a published input is not a try).
 */
export function arrived(earlier: InputState | undefined, arrival: Arrival): InputState {
  if (earlier && wasPublished(earlier)) throw new IllegalTransition(earlier.status, 'arrived');
  const before = earlier && TRYING.includes(earlier.status) ? crashed(earlier, arrival) : earlier;
  return {
    ...before,
    sha256: arrival.sha256,
    status: 'received',
    file: arrival.file,
    pipeline: arrival.pipeline,
    location: arrival.location,
    attempts: before?.attempts ?? 0,
    receivedAt: before?.receivedAt ?? arrival.at,
    nextAttemptAt: undefined,
  };
}

/**
 * A try that never recorded its end — its worker was killed (kill -9, the OOM killer, a lost
 * machine) — found by the next try. Whether it was the input's fault is decided by its
 * progress: a try that got the broker to confirm records beyond where it began (its resume
 * point moved past `begunAfter`) had validated the whole file and was publishing it, so it died
 * of the worker's death, not of the file: its attempt is given back. Such tries cannot repeat for
 * ever, since each one moves the resume point on by at least a chunk. A try that confirmed
 * nothing new may have been killed by the file itself (a decoder that eats the memory): its
 * attempt stays used, so a file that kills every worker still ends `dead`.
 */
export function crashed(state: InputState, { at }: { at: string }): InputState {
  from(state, TRYING, 'crashed');
  const began = state.begunAfter ?? 0;
  const confirmed = state.resume?.confirmed ?? 0;
  const progressed = confirmed > began;
  return withFailure(
    {
      ...state,
      status: 'retry-scheduled',
      attempts: progressed ? state.attempts - 1 : state.attempts,
      nextAttemptAt: at,
    },
    {
      attempt: state.attempts,
      kind: 'unfinished',
      reason: progressed
        ? `the try did not finish: the worker stopped or crashed after the broker confirmed ${confirmed - began} more record(s) (${confirmed} in all); not the input's fault, its attempt is given back`
        : 'the try did not finish: the worker stopped or crashed while working on it, before the broker confirmed any more of its records',
    },
    at,
  );
}

/**
 * What the try does next: `give-up` when the input is dead or its attempts are used up;
 * `not-due` when a retry is scheduled later (unless `ignoreSchedule`: reprocessing by hand);
 * otherwise `try`.
 */
export function nextStep(
  earlier: InputState | undefined,
  state: InputState,
  {
    maxAttempts,
    now,
    ignoreSchedule = false,
  }: { maxAttempts: number; now: number; ignoreSchedule?: boolean },
): { step: 'give-up' } | { step: 'not-due'; due: number } | { step: 'try' } {
  if (earlier?.status === 'dead' || state.attempts >= maxAttempts) return { step: 'give-up' };
  const due =
    earlier?.status === 'retry-scheduled' && earlier.nextAttemptAt
      ? Date.parse(earlier.nextAttemptAt)
      : 0;
  if (due > now && !ignoreSchedule) return { step: 'not-due', due };
  return { step: 'try' };
}

/** The try starts: its attempt is counted, and written before any work, so a crash still counts it. */
export function begin(state: InputState): InputState {
  from(state, ['received'], 'begin');
  // Where the try starts, so that the next one can tell whether it made progress (`crashed`).
  return { ...state, attempts: state.attempts + 1, begunAfter: state.resume?.confirmed ?? 0 };
}

/** Every record passed validation; publishing starts. */
export function validated(state: InputState): InputState {
  from(state, ['received'], 'validated');
  return { ...state, status: 'publishing' };
}

/**
 * The broker confirmed the first `confirmed` records of the try: recorded after every chunk, so
 * whatever ends the try next (a stop, a crash, an outage, an error) resumes after them.
 */
export function progressed(
  state: InputState,
  { confirmed, correlationId }: { confirmed: number; correlationId: string },
): InputState {
  from(state, ['publishing'], 'progressed');
  return { ...state, resume: { confirmed, correlationId } };
}

/** The broker confirmed every record, and the ids are in the drop: never published again. */
export function published(
  state: InputState,
  facts: { response: AcceptedSummary; processedAt: string },
): InputState {
  from(state, TRYING, 'published');
  return {
    ...state,
    status: 'published',
    response: facts.response,
    processedAt: facts.processedAt,
    deferrals: 0,
    resume: undefined,
    begunAfter: undefined,
  };
}

/** The input's fault: `failed` (reprocessing may try again), or `dead` when that was its last attempt. */
export function rejected(
  state: InputState,
  { reason, at, maxAttempts }: { reason: string; at: string; maxAttempts: number },
): InputState {
  from(state, TRYING, 'rejected');
  const failed = withFailure(
    {
      ...state,
      status: 'failed',
      processedAt: at,
      resume: undefined,
      begunAfter: undefined,
      receiptPending: true,
    },
    { attempt: state.attempts, kind: 'rejected', reason },
    at,
  );
  return failed.attempts >= maxAttempts ? { ...failed, status: 'dead' } : failed;
}

/**
 * The broker or the drop store was not there (an outage): nobody's fault in the input, so the
 * attempt is given back; due again at `notBefore` (the back-off grows with `deferrals`).
 */
export function deferred(
  state: InputState,
  { reason, at, notBefore }: { reason: string; at: string; notBefore: string },
): InputState {
  from(state, TRYING, 'deferred');
  return withFailure(
    {
      ...state,
      status: 'retry-scheduled',
      attempts: state.attempts - 1,
      deferrals: (state.deferrals ?? 0) + 1,
      nextAttemptAt: notBefore,
    },
    { attempt: state.attempts, kind: 'unavailable', reason },
    at,
  );
}

/** A failure of ours (unexpected, a refused permission): the attempt stays used; due again at `notBefore`. */
export function retryScheduled(
  state: InputState,
  { reason, at, notBefore }: { reason: string; at: string; notBefore: string },
): InputState {
  from(state, TRYING, 'retryScheduled');
  return withFailure(
    { ...state, status: 'retry-scheduled', deferrals: 0, nextAttemptAt: notBefore },
    { attempt: state.attempts, kind: 'error', reason },
    at,
  );
}

/**
 * The worker stopped: the attempt is given back (a stop is nobody's fault) and the input is due
 * at once; `confirmed` records were confirmed and the next try publishes only the rest.
 */
export function interrupted(
  state: InputState,
  { confirmed, correlationId, at }: { confirmed: number; correlationId: string; at: string },
): InputState {
  from(state, TRYING, 'interrupted');
  return withFailure(
    {
      ...state,
      status: 'retry-scheduled',
      attempts: state.attempts - 1,
      nextAttemptAt: at,
      resume: confirmed > 0 ? { confirmed, correlationId } : undefined,
    },
    {
      attempt: state.attempts,
      kind: 'interrupted',
      reason: `interrupted by a stop of the worker after ${confirmed} confirmed record(s)`,
    },
    at,
  );
}

/** No attempts left: terminal; never tried again on its own (reprocessing does not select it). */
export function dead(state: InputState): InputState {
  from(state, ['received', 'publishing', 'failed', 'retry-scheduled', 'dead'], 'dead');
  return { ...state, status: 'dead', nextAttemptAt: undefined };
}

/** Whether the try that just failed was the input's last. */
export const exhausted = (state: InputState, maxAttempts: number) => state.attempts >= maxAttempts;

/** A settle is planned: recorded before the receipt is written, so a crash carries out the same plan. */
export function settling(state: InputState, plan: SettlePlan): InputState {
  from(state, ['published', 'receipted', 'failed', 'dead'], 'settling');
  return { ...state, settling: plan };
}

/**
 * The settle is done: the receipt is written (added to `receipts`, never replacing one) and the
 * input is where `location` says. An accepted input becomes `receipted`; a failed or dead one keeps its status.
 */
export function settled(
  state: InputState,
  { receipt, location }: { receipt: string; location: string | undefined },
): InputState {
  from(state, ['published', 'receipted', 'failed', 'dead'], 'settled');
  return {
    ...state,
    status: state.status === 'published' ? 'receipted' : state.status,
    settling: undefined,
    receiptPending: undefined,
    receipt,
    receipts: [...receiptsOf(state), receipt],
    location,
  };
}

/** A copy of accepted bytes got its `duplicate` receipt: noted, the accepted input's state otherwise unchanged. */
export function duplicateReceipted(state: InputState, receipt: string): InputState {
  from(state, ['published', 'receipted'], 'duplicateReceipted');
  return { ...state, receipts: [...receiptsOf(state), receipt] };
}

/** Every receipt written for the input, oldest first (states from before `receipts` have one). */
const receiptsOf = (state: InputState) => state.receipts ?? (state.receipt ? [state.receipt] : []);
