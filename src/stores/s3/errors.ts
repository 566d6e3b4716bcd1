import { DropUnavailable } from '../../errors.js';
import { DropAccessDenied, DropMisconfigured } from '../../operator-errors.js';

/** A failed S3 request, naming the operation, bucket and key (never credentials: the secret never leaves the signer). */
export class S3DropError extends Error {
  override readonly name = 'S3DropError';
  constructor(
    readonly operation: string,
    readonly bucket: string,
    readonly key: string,
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    const status = (cause as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
      ?.httpStatusCode;
    super(
      `S3 ${operation} s3://${bucket}/${key} failed${status ? ` (HTTP ${status})` : ''}: ${reason}`,
      { cause },
    );
  }
}

/** Answers that mean the server (or the way to it) is not there now; the SDK already retried them. */
const UNAVAILABLE_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ThrottlingException',
  'Throttling',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
]);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);
const DENIED_NAMES = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AllAccessDisabled',
]);

/**
 * The one place where an SDK error's shape is read: an outage (network error, timeout, 5xx,
 * throttling) becomes `DropUnavailable`, a refusal (403) `DropAccessDenied`, a missing bucket
 * `DropMisconfigured`, anything else an
 * `S3DropError`. Each keeps the `S3DropError` naming operation, bucket and key as its cause.
 */
export function s3DropError(operation: string, bucket: string, key: string, error: unknown): Error {
  if (error instanceof DropUnavailable || error instanceof DropAccessDenied) return error;
  const failed =
    error instanceof S3DropError ? error : new S3DropError(operation, bucket, key, error);
  const cause = error as { name?: string; code?: unknown; $metadata?: { httpStatusCode?: number } };
  const status = cause?.$metadata?.httpStatusCode;
  const name = cause?.name ?? '';
  if (
    UNAVAILABLE_NAMES.has(name) ||
    (typeof cause?.code === 'string' && NETWORK_CODES.has(cause.code)) ||
    (status !== undefined && (status >= 500 || status === 429)) ||
    (error instanceof Error && /socket hang up|aborted/i.test(error.message))
  )
    return new DropUnavailable(failed.message, failed);
  if (DENIED_NAMES.has(name) || status === 403) return new DropAccessDenied(failed.message, failed);
  // The drop's "folder" is the bucket: one that does not exist is a setup mistake, not an empty drop.
  if (name === 'NoSuchBucket')
    return new DropMisconfigured('drop-folder-missing', `The bucket ${bucket} does not exist`);
  return failed;
}
