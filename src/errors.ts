/**
 * Typed errors and the one mapping to problem details (RFC 9457, spec §2.2).
 *
 * Every failure the service reports — over HTTP or in a receipt — is an `IngestError`
 * with a stable `code`. Anything else that escapes is a bug: it becomes a generic 500
 * whose body never carries the original message (it may hold a secret or a stack). The errors
 * of the service's own parts, for the operator, are in operator-errors.ts.
 */
import { HistoryUnavailable } from './operator-errors.js';

/** One entry of `errors` on a batch 400: a failing record by its position in the batch. */
export interface RecordErrors {
  index: number;
  errors: string[];
}

/** A field-level entry (spec §2.2 "may also report entries with path and message"). */
export interface FieldError {
  path: string;
  message: string;
}

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  errors?: Array<RecordErrors | FieldError>;
  [extension: string]: unknown;
}

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

const REASON: Record<number, string> = {
  200: 'OK',
  202: 'Accepted',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

export function reasonPhrase(status: number): string {
  return REASON[status] ?? 'Error';
}

interface IngestErrorInit {
  detail: string;
  cause?: unknown;
  errors?: Array<RecordErrors | FieldError>;
  /** Response headers that belong to this problem, e.g. `Retry-After`, `WWW-Authenticate`. */
  headers?: Record<string, string>;
}

export abstract class IngestError extends Error {
  /** Stable, machine-readable; also the last segment of the problem `type`. */
  abstract readonly code: string;
  abstract readonly status: number;
  readonly errors?: Array<RecordErrors | FieldError>;
  readonly headers: Record<string, string>;

  constructor(init: IngestErrorInit) {
    super(init.detail, init.cause === undefined ? undefined : { cause: init.cause });
    this.errors = init.errors;
    this.headers = init.headers ?? {};
  }

  override get name(): string {
    return this.constructor.name;
  }
}

export class ValidationFailed extends IngestError {
  readonly code = 'validation-failed';
  readonly status = 400;
}

/** The body could not be read as a batch at all (not JSON, not an array, broken CSV). */
export class MalformedBody extends IngestError {
  readonly code = 'malformed-body';
  readonly status = 400;
}

/** A query parameter of a read (a filter, a cursor, a limit) is not one the route takes. */
export class InvalidQuery extends IngestError {
  readonly code = 'invalid-query';
  readonly status = 400;
}

export class Unauthorized extends IngestError {
  readonly code = 'unauthorized';
  readonly status = 401;
  constructor(detail: string) {
    super({
      detail,
      headers: { 'www-authenticate': 'Basic realm="warehouse-ingest", charset="UTF-8"' },
    });
  }
}

export class NotFound extends IngestError {
  readonly code = 'not-found';
  readonly status = 404;
}

/** A resend asked for an event none of the business's endpoints takes now: nothing was sent. */
export class NoSubscriber extends IngestError {
  readonly code = 'no-subscriber';
  readonly status = 409;
}

export class MethodNotAllowed extends IngestError {
  readonly code = 'method-not-allowed';
  readonly status = 405;
}

export class PayloadTooLarge extends IngestError {
  readonly code = 'payload-too-large';
  readonly status = 413;
}

export class UnsupportedMediaType extends IngestError {
  readonly code = 'unsupported-media-type';
  readonly status = 415;
}

/** A business's rate limit or in-flight batch limit, or too many failed logins: `Retry-After` says when to retry. */
export class TooManyRequests extends IngestError {
  readonly code = 'too-many-requests';
  readonly status = 429;
  constructor(detail: string, retryAfterSeconds: number, headers: Record<string, string> = {}) {
    super({
      detail,
      headers: { ...headers, 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    });
  }
}

/** The body (or the headers) did not arrive within `http.requestTimeoutMs`. */
export class RequestTimeout extends IngestError {
  readonly code = 'request-timeout';
  readonly status = 408;
}

/**
 * The connection closed before the body was complete (the client gave up, or the request
 * time-out closed it). Nobody receives this answer; it keeps the log line an info, not a 500.
 */
export class RequestAborted extends IngestError {
  readonly code = 'request-aborted';
  readonly status = 400;
}

/** The request's header section is over `http.maxHeaderBytes`. */
export class HeaderFieldsTooLarge extends IngestError {
  readonly code = 'header-fields-too-large';
  readonly status = 431;
}

/** An `Idempotency-Key` header that is not a string of 1-255 printable ASCII characters. */
export class InvalidIdempotencyKey extends IngestError {
  readonly code = 'invalid-idempotency-key';
  readonly status = 400;
}

/** An `Idempotency-Key` whose first request is still being processed. */
export class IdempotencyKeyInUse extends IngestError {
  readonly code = 'idempotency-key-in-use';
  readonly status = 409;
}

/** An `Idempotency-Key` used before with a different request (path or body). */
export class IdempotencyKeyReused extends IngestError {
  readonly code = 'idempotency-key-reused';
  readonly status = 422;
}

/**
 * The shared `Idempotency-Key` store (Redis) cannot be reached: the request is not run, since
 * nothing could stop a retry from running it twice. `Retry-After` is set.
 */
export class IdempotencyUnavailable extends IngestError {
  readonly code = 'idempotency-unavailable';
  readonly status = 503;
  constructor(init: { detail: string; cause?: unknown }) {
    super({ ...init, headers: { 'retry-after': '5' } });
  }
}

/**
 * Every decoder of compressed bodies is busy (`http.maxConcurrentDecodes`, process-wide): a decoder may
 * take up to `http.bodyLimitBytes` (twice, while its output is joined), so their number bounds the
 * memory compressed bodies can claim. Refused at once, not queued; nothing of the request was run.
 */
export class DecodersBusy extends IngestError {
  readonly code = 'decoders-busy';
  readonly status = 503;
  constructor(max: number) {
    super({
      detail: `All ${max} decoders of compressed bodies are busy; nothing of this request was run. Retry after Retry-After, or send the body uncompressed.`,
      headers: { 'retry-after': '1' },
    });
  }
}

export class NotImplemented extends IngestError {
  readonly code = 'not-implemented';
  readonly status = 501;
}

/**
 * The broker did not confirm every message of a batch (nack, return, channel or
 * connection loss, timeout). Nothing of the batch may be reported accepted; the caller
 * retries, and stable message ids let consumers drop the copies of a partial attempt.
 */
export class PublishFailed extends IngestError {
  readonly code = 'publish-failed';
  readonly status = 503;
  constructor(detail: string, cause?: unknown, retryAfterSeconds = 5) {
    super({ detail, cause, headers: { 'retry-after': String(retryAfterSeconds) } });
  }
}

/**
 * The broker refused a message of the batch (a nack): its queue could not take it. A quorum
 * queue does so while it has no leader it can reach — after a node loss, the publishing channel
 * may keep a leader that is gone, so the publisher opens a fresh channel on a nack.
 */
export class PublishNacked extends PublishFailed {}

/** The service is stopping (SIGTERM): a request that arrives now is not taken; another instance (or this one, restarted) will. */
export class ShuttingDown extends IngestError {
  readonly code = 'shutting-down';
  readonly status = 503;
  constructor() {
    super({
      detail:
        'The service is stopping and takes no new requests; nothing of this request was accepted. Send it again.',
      headers: { 'retry-after': '5' },
    });
  }
}

/**
 * A streamed batch cut short by a stop: the publish pass ended at a chunk boundary once the
 * chunks in flight were confirmed. The first `confirmed` records (counting any an earlier try
 * confirmed) are published and confirmed; none after them was sent.
 */
export class Interrupted extends IngestError {
  readonly code = 'interrupted';
  readonly status = 503;
  constructor(readonly confirmed: number) {
    super({
      detail: `Interrupted by a stop after ${confirmed} confirmed record(s); the rest was not published.`,
      headers: { 'retry-after': '5' },
    });
  }
}

/**
 * A drop store (local folder, SFTP server, S3 bucket) could not be reached: connection refused
 * or reset, a timeout, a 5xx or throttling answer, a mount that went away. Each store maps its
 * transport errors to this once, at its boundary; the drop engine asks for this type (never an
 * error's shape) to tell an outage, which is nobody's fault in the input and uses no attempt,
 * from a failure that could be the input's or ours. `cause` is the store's own error.
 */
export class DropUnavailable extends IngestError {
  readonly code = 'drop-unavailable';
  readonly status = 503;
  constructor(detail: string, cause?: unknown) {
    super({ detail, cause, headers: { 'retry-after': '5' } });
  }
}

/** The local resources whose exhaustion is an outage of the worker, never the input's fault. */
export const LOCAL_RESOURCES: Readonly<Record<string, string>> = {
  ENOSPC: 'its local disk is full',
  EDQUOT: 'its disk quota is used up',
  EMFILE: 'it has too many files open',
  ENFILE: 'the system has too many files open',
};

/**
 * The worker's own machine ran out of a local resource while it worked on an input: its scratch
 * disk (`dataDirectory`) is full, a quota is used up, or no file descriptor is left. An outage of
 * the worker, like a broker outage — nobody's fault in the input, so a dropped file's try uses no
 * attempt and is tried again after a back-off. Scratch writers map their system errors to this
 * once, where they write (`asLocalResourceError`); `resource` is the system error's code.
 */
export class LocalResourcesExhausted extends IngestError {
  readonly code = 'local-resources-exhausted';
  readonly status = 503;
  constructor(
    readonly resource: string,
    cause?: unknown,
  ) {
    super({
      detail: `The worker ran out of a local resource (${resource}: ${LOCAL_RESOURCES[resource] ?? 'exhausted'}); nothing of this input is at fault. Try again later.`,
      cause,
      headers: { 'retry-after': '5' },
    });
  }
}

/**
 * `error` as `LocalResourcesExhausted` when it (or an error it wraps) is a system error of an
 * exhausted local resource (ENOSPC, EDQUOT, EMFILE, ENFILE); any other error as it is.
 */
export function asLocalResourceError(error: unknown): unknown {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; depth++) {
    if (at instanceof LocalResourcesExhausted) return at;
    const code = (at as NodeJS.ErrnoException).code;
    if (code !== undefined && code in LOCAL_RESOURCES)
      return new LocalResourcesExhausted(code, error);
    at = at.cause;
  }
  return error;
}

/** /readyz: the broker, a route or a source is not usable yet. */
export class NotReady extends IngestError {
  readonly code = 'not-ready';
  readonly status = 503;
  constructor(problems: readonly string[]) {
    super({ detail: `Not ready: ${problems.join('; ')}`, headers: { 'retry-after': '5' } });
  }
}

/**
 * A dropped file was given up on after `retry.maxAttempts` tries that could be its fault
 * (rejections, unexpected errors, tries cut short by a crash): settled as failed, never tried again on its own.
 */
export class GaveUp extends IngestError {
  readonly code = 'gave-up';
  readonly status = 422;
}

/**
 * A dropped file whose name the worker cannot use (too long to claim and receipt under NAME_MAX):
 * moved to `failed/` under a shortened name, never processed.
 */
export class UnusableFileName extends IngestError {
  readonly code = 'unusable-file-name';
  readonly status = 422;
}

/**
 * A read of the history (the partner API) while its store cannot be reached: nothing is wrong
 * with the request, and ingest goes on; the reads come back with the store.
 */
export class HistoryReadFailed extends IngestError {
  readonly code = 'history-unavailable';
  readonly status = 503;
  constructor(cause: unknown) {
    super({
      detail:
        'The history cannot be read just now; batches are still taken. Retry after `Retry-After` seconds.',
      cause,
      headers: { 'retry-after': '5' },
    });
  }
}

export class InternalError extends IngestError {
  readonly code = 'internal-error';
  readonly status = 500;
}

export function isIngestError(error: unknown): error is IngestError {
  return error instanceof IngestError;
}

/** Problem `type` URI references; documented in docs/api.md#problem-types. */
export function problemType(code: string): string {
  return `/problems/${code}`;
}

/** The one mapping from any thrown value to a problem-details body and its headers. */
export function toProblem(
  error: unknown,
  instance?: string,
): { problem: ProblemDetails; headers: Record<string, string> } {
  const known = isIngestError(error)
    ? error
    : error instanceof HistoryUnavailable
      ? new HistoryReadFailed(error)
      : new InternalError({
          detail: 'The request could not be processed. It has been logged.',
          cause: error,
        });
  const problem: ProblemDetails = {
    type: problemType(known.code),
    title: reasonPhrase(known.status),
    status: known.status,
    detail: known.message,
  };
  if (instance !== undefined) problem.instance = instance;
  if (known.errors !== undefined) problem.errors = known.errors;
  return { problem, headers: known.headers };
}
