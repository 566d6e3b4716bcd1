import {
  DropUnavailable,
  isIngestError,
  LocalResourcesExhausted,
  PublishFailed,
} from '../../errors.js';

/**
 * How an error of a try of a dropped file is classed — the input's fault (a rejection), nobody's
 * (an outage), or ours (anything else) — and how a try is started. How a try ends is
 * `TryOutcome` (vocabulary.ts). Shared by the file processor, the drop runner and reprocessing.
 */

/** How a try is started: `ignoreSchedule` for reprocessing by hand, which does not wait out a back-off. */
export interface TryOptions {
  readonly ignoreSchedule?: boolean;
  /** The try's trace (W3C), written on every message it publishes. @default none */
  readonly trace?: { readonly traceparent: string; readonly tracestate?: string };
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
 * The broker or the drop store was not there: nobody's fault in the input, so the try does not
 * count towards `retry.maxAttempts`. Asked by type: the publisher says `PublishFailed` when the
 * broker did not confirm, and each store maps its own transport errors to `DropUnavailable` at
 * its boundary (stores/local/index.ts, stores/sftp/index.ts, stores/s3/errors.ts). The worker's
 * own machine running out of disk or file descriptors (`LocalResourcesExhausted`: a full
 * `dataDirectory` while the copy or the records are spooled) is an outage of the worker, no more
 * the file's fault than a broker outage. A Node system error is not an outage by itself: a
 * refused permission is `DropAccessDenied`, and anything unmapped is ours.
 */
export const isUnavailable = (error: unknown) =>
  error instanceof DropUnavailable ||
  error instanceof PublishFailed ||
  error instanceof LocalResourcesExhausted;
