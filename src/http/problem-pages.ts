import { NotFound, PROBLEM_MEDIA_TYPE, problemType, reasonPhrase } from '../errors.js';

/**
 * Every problem `type` the service uses, with what it means: `/problems/<code>` is a relative URI
 * reference, so a client resolves it against the service and lands here (GET /problems/<code>),
 * on a page that says what happened and what to do. docs/api.md#problem-types lists the same
 * codes (test/http/openapi-lint.test.ts checks that the two agree).
 */
export const PROBLEM_TYPES: Readonly<Record<string, { status: number; meaning: string }>> = {
  'validation-failed': {
    status: 400,
    meaning:
      'One or more records fail validation or carry another business id. `errors` lists every failing record by its position (`index`) with every failing field as `<path>: <message>`. Nothing was accepted: fix the records and send the whole batch again.',
  },
  'malformed-body': {
    status: 400,
    meaning:
      'The body is empty, not UTF-8, not JSON, not a JSON array, or an empty array; a v1 CSV body is not readable; or the URL is malformed. Nothing was accepted.',
  },
  'invalid-idempotency-key': {
    status: 400,
    meaning:
      '`Idempotency-Key` is not 1-255 printable ASCII characters (bare, or a structured-field string in quotes). The body was not read.',
  },
  'invalid-query': {
    status: 400,
    meaning:
      'A query parameter of a read is not one it takes: an unknown filter value, a time that is not ISO 8601, a `limit` out of range, or a `cursor` this service did not give. `errors` names each parameter.',
  },
  'request-aborted': {
    status: 400,
    meaning:
      'The client closed the connection before the whole body arrived. Nothing was accepted.',
  },
  unauthorized: {
    status: 401,
    meaning:
      'Credentials missing, malformed, unknown or wrong. Send HTTP Basic: the business id as user, its API key as password.',
  },
  'not-found': { status: 404, meaning: 'No resource at this path. The API lives under /api/v2/.' },
  'method-not-allowed': {
    status: 405,
    meaning: 'This path does not take this method; the `Allow` header names the one it takes.',
  },
  'request-timeout': {
    status: 408,
    meaning:
      'The request was not received completely within the time limit (`http.requestTimeoutMs`). Send it again, with the same `Idempotency-Key`.',
  },
  'idempotency-key-in-use': {
    status: 409,
    meaning:
      'A request with this `Idempotency-Key` is still being processed. Retry after `Retry-After` seconds: you will get its answer.',
  },
  'no-subscriber': {
    status: 409,
    meaning:
      'None of your webhook endpoints or outbound folders takes events of this type now (their `events` filters), or the event is a `webhook.test` (send a new test instead), so the resend sent nothing. Name one endpoint with `endpoint` to send it there anyway.',
  },
  'payload-too-large': {
    status: 413,
    meaning:
      'The body is larger than the limit, or the batch has more records than allowed; `detail` states the limit. Split the batch.',
  },
  'unsupported-media-type': {
    status: 415,
    meaning:
      '`Content-Type` is not one this endpoint takes: `application/json` in UTF-8 (v1 also `text/csv`).',
  },
  'unusable-file-name': {
    status: 422,
    meaning:
      'Not an HTTP answer: the problem in the receipt of a dropped file whose name is too long to be claimed and receipted (255 bytes at most, with room for the claim and receipt names). The file was moved to `failed/` under a shortened name and not processed: give it a shorter name and drop it again.',
  },
  'history-unavailable': {
    status: 503,
    meaning:
      'A read of the history (`GET /api/v2/batches`…) while its database cannot be reached. Batches are still taken. Retry after `Retry-After` seconds.',
  },
  'idempotency-unavailable': {
    status: 503,
    meaning:
      'A request with an `Idempotency-Key` arrived while the shared store of the instances (Redis) could not be reached. It was not run, since nothing could stop a retry from running it twice. Retry after `Retry-After` seconds; requests without the header are taken meanwhile.',
  },
  'decoders-busy': {
    status: 503,
    meaning:
      'The service was decoding as many compressed bodies (`Content-Encoding`) as it allows at once. Nothing of this request was run: retry after `Retry-After` seconds, or send the body uncompressed.',
  },
  'local-resources-exhausted': {
    status: 503,
    meaning:
      'Not an HTTP answer: a try of a dropped file ran out of local disk (`ENOSPC`, `EDQUOT`) or file descriptors (`EMFILE`, `ENFILE`) on the worker. Nothing of the file is at fault: it is tried again later without using an attempt.',
  },
  'idempotency-key-reused': {
    status: 422,
    meaning:
      'This `Idempotency-Key` was used before for a different request (another endpoint or another body). Use a new key for a new batch.',
  },
  'gave-up': {
    status: 422,
    meaning:
      'Not an HTTP answer: the receipt of a dropped file that failed on every try (`retry.maxAttempts`).',
  },
  'too-many-requests': {
    status: 429,
    meaning:
      'The business sent more than its rate limit allows, has too many batches in flight, or too many failed logins came from this address or for this business. Retry after `Retry-After` seconds.',
  },
  'header-fields-too-large': {
    status: 431,
    meaning: 'The request header section is larger than the limit (`http.maxHeaderBytes`).',
  },
  'internal-error': {
    status: 500,
    meaning:
      'A bug on our side; it was logged with the request correlation id (`x-correlation-id`). Nothing was accepted.',
  },
  'not-implemented': {
    status: 501,
    meaning:
      'The v1 stock snapshot: no stock source is connected; the same answer for every account.',
  },
  'drop-unavailable': {
    status: 503,
    meaning:
      'Not an HTTP answer: a file drop (local mount, SFTP, S3) could not be reached during a try; the file is tried again.',
  },
  'publish-failed': {
    status: 503,
    meaning:
      'The message broker did not confirm every record. Nothing is reported accepted; sending the same batch again is safe (the same records get the same message ids). `Retry-After` says when.',
  },
  'not-ready': {
    status: 503,
    meaning: 'The readiness probe (`/readyz`): the service is not ready.',
  },
  interrupted: {
    status: 503,
    meaning:
      'Not an HTTP answer: a dropped file cut short by a stop of the service; the next try resumes it.',
  },
  'shutting-down': {
    status: 503,
    meaning:
      'The service is stopping and takes no new request. Retry after `Retry-After` seconds (another instance answers).',
  },
};

const escapeHtml = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const code = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

/** GET /problems/<code>: a small HTML page per problem type (no script, no outside resource). */
export function problemPage(name: string | undefined): Response {
  const known = name !== undefined && Object.hasOwn(PROBLEM_TYPES, name) ? name : undefined;
  if (!known) throw new NotFound({ detail: 'No such problem type.' });
  const { status, meaning } = PROBLEM_TYPES[known]!;
  const title = `${status} ${reasonPhrase(status)}: ${problemType(known)}`;
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>${code(meaning)}</p>
<p>Answers of this type are <code>${PROBLEM_MEDIA_TYPE}</code> (RFC 9457) with <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code> and <code>instance</code>. All problem types and the API: <a href="/docs">/docs</a>.</p>
</body></html>
`;
  return new Response(html, {
    statusText: 'OK',
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      'cache-control': 'public, max-age=3600',
    },
  });
}
