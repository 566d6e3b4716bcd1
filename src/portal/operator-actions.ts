import type { InputStatus, ReprocessOutcome } from '../vocabulary.js';
import type { DeadLetter } from '../events/retry.js';

/**
 * What the operator's pages ask of the running service: the drops' inputs and a reprocess, the
 * events' dead letters and a replay. main.ts hands in the functions the CLI's `status`,
 * `reprocess` and `events replay` use (operator-actions.ts beside it), so a button does what the
 * command does.
 */

/** One input whose last try failed, as `status` reports it. */
export interface FailingInput {
  readonly file: string;
  readonly sha256: string;
  readonly status: InputStatus;
  readonly attempts: number;
  readonly lastError?: string | undefined;
  readonly updatedAt?: string | undefined;
  readonly nextAttemptAt?: string | undefined;
  readonly location?: string | undefined;
}

/** One pipeline's drop: its inputs by state and the latest that failed. */
export interface DropView {
  readonly pipeline: string;
  readonly source: string;
  readonly inputs: number;
  readonly byStatus: Readonly<Record<InputStatus, number>>;
  readonly lastFailures: readonly FailingInput[];
  /** Set when the drop could not be read. */
  readonly error?: string;
}

/** What one Reprocess did; undefined when the input is not one a reprocess takes. */
export interface ReprocessAnswer {
  /** Another worker holds the drop's lease: nothing was tried here. */
  readonly standby: boolean;
  /** Undefined when no try was made (the input was taken by another worker meanwhile). */
  readonly outcome?: ReprocessOutcome | undefined;
  readonly attempt?: number | undefined;
  readonly reason?: string | undefined;
}

/** A dead letter as the page shows it: the endpoint by its name when it is still configured. */
export type DeadLetterView = Omit<DeadLetter, 'endpoint'> & {
  /** The endpoint's name when it is still configured, else the id the letter carries. */
  readonly endpoint: string;
};

/** What one Replay did: moved back to the delivery queue, held back (and why), or not found. */
export type ReplayAnswer =
  | { readonly end: 'replayed' }
  | { readonly end: 'held-back'; readonly why: string }
  | { readonly end: 'not-found' };

export interface OperatorActions {
  drops(): Promise<readonly DropView[]>;
  reprocess(pipeline: string, sha256: string): Promise<ReprocessAnswer | undefined>;
  /** Undefined without a broker: nothing is delivered, nothing is dead. */
  readonly deadLetters?: () => Promise<readonly DeadLetterView[]>;
  readonly replay?: (id: string) => Promise<ReplayAnswer>;
}
