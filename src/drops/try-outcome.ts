import { isIngestError } from '../errors.js';

/**
 * How one try of a dropped file ends, and how an error is classed: the input's fault (a
 * rejection), nobody's (an outage), or ours (anything else). Shared by the file processor, the
 * drop runner and reprocessing.
 */

/**
 * `retried`: a transient failure; the caller puts the file back (see `RetryLater`). `skipped`:
 * another worker has it now. `dead`: given up on after `retry.maxAttempts` tries. `interrupted`:
 * the worker is stopping; what was confirmed is recorded in the state (`resume`) and the caller
 * puts the file back, for the next start to publish the rest.
 */
export type Outcome =
  | 'accepted'
  | 'rejected'
  | 'duplicate'
  | 'dead'
  | 'retried'
  | 'skipped'
  | 'interrupted';

/** How a try is started: `ignoreSchedule` for reprocessing by hand, which does not wait out a back-off. */
export interface TryOptions {
  readonly ignoreSchedule?: boolean;
}

/** A transient failure, or a scheduled retry not yet due: the file goes back and waits until `notBefore`. */
export class RetryLater extends Error {
  override readonly name = 'RetryLater';
  constructor(
    reason: string,
    readonly notBefore: number,
    cause?: unknown,
    /** The input's state says it is not due yet (nothing was tried now). */
    readonly scheduled = false,
  ) {
    super(reason, cause === undefined ? undefined : { cause });
  }
}

/** Rejections are the input's fault (4xx): the file fails. Anything else may pass: it is retried. */
export const isRejection = (error: unknown) =>
  isIngestError(error) && error.status >= 400 && error.status < 500;

/**
 * The broker or the store was not there (503, or a system error from a connection): nobody's
 * fault in the input, so the try does not count towards `retry.maxAttempts`.
 */
export const isUnavailable = (error: unknown) =>
  isIngestError(error)
    ? error.status === 503
    : typeof (error as { code?: unknown })?.code === 'string' ||
      (error as { $metadata?: unknown })?.$metadata !== undefined;
