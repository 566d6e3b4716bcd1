/**
 * The reusable parts of /openapi.json: request parameters, response headers and the answers
 * every POST endpoint can give, each described once and referenced by `$ref`.
 */
import { PROBLEM_TYPES } from './problem-pages.js';

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const string = { type: 'string' } as const;

export const HEADERS = {
  CorrelationId: {
    description:
      "The request's correlation id: the `x-correlation-id` sent, or a generated UUID. On an idempotent replay, the id of the first request (the one the body answers). Quote it when asking about a request.",
    schema: string,
  },
  RateLimit: {
    description:
      'The business\'s rate limit now (draft-ietf-httpapi-ratelimit-headers): `"default";r=<requests left>;t=<seconds until the bucket is full>`.',
    schema: string,
    example: '"default";r=119;t=1',
  },
  RateLimitPolicy: {
    description: 'The business\'s rate-limit policy: `"default";q=<requests>;w=<window seconds>`.',
    schema: string,
    example: '"default";q=120;w=60',
  },
  RetryAfter: {
    description: 'Seconds to wait before sending the request again.',
    schema: { type: 'integer', minimum: 1 },
    example: 5,
  },
  IdempotentReplayed: {
    description:
      '`true` when this is the stored answer of an earlier request with the same `Idempotency-Key` (nothing was published again).',
    schema: { type: 'string', enum: ['true'] },
  },
  IngestEnvironment: {
    description:
      '`sandbox` on every answer of the sandbox environment, which validates like production and publishes nothing. Absent elsewhere.',
    schema: { type: 'string', enum: ['sandbox'] },
  },
  Deprecation: {
    description:
      'The v1 endpoints are deprecated (RFC 9745): the date they were, as `@<Unix seconds>`.',
    schema: string,
    example: '@1767225600',
  },
  Link: {
    description:
      'The successor of a deprecated v1 endpoint: `</api/v2/<kind>>; rel="successor-version"`.',
    schema: string,
    example: '</api/v2/sales-orders>; rel="successor-version"',
  },
  WwwAuthenticate: {
    description: 'How to authenticate: HTTP Basic.',
    schema: string,
    example: 'Basic realm="warehouse-ingest", charset="UTF-8"',
  },
  Allow: { description: 'The method this path takes.', schema: string, example: 'POST' },
} as const;

// No `example` on these: Swagger UI would pre-fill it in "Try it out", and one fixed Idempotency-Key
// sent with an edited body is a 422.
export const PARAMETERS = {
  CorrelationId: {
    name: 'x-correlation-id',
    in: 'header',
    required: false,
    description:
      'Your id for this request, echoed in the answer, on every published message (`correlationId`) and in the logs: 1-128 printable ASCII characters without spaces; otherwise a UUID is generated. E.g. `order-import-2026-03-02-0001`.',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe to send: a second request with the same key and body gets the stored answer of the first (`Idempotent-Replayed: true`) and publishes nothing more; with another body it is `422`; while the first is in flight, `409`. 1-255 printable ASCII characters, bare or as a structured-field string in quotes. Kept per business for `http.abuse.idempotency.ttlSeconds`. E.g. a UUID per batch.',
    schema: { type: 'string', minLength: 1, maxLength: 257 },
  },
  Traceparent: {
    name: 'traceparent',
    in: 'header',
    required: false,
    description:
      'W3C Trace Context: the request continues your trace, and every published message carries it (`traceparent` header). Without one a trace is begun. E.g. `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.',
    schema: { type: 'string', pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}' },
  },
} as const;

/** Headers on every answer of a batch endpoint (v1 adds Deprecation and Link). */
function common(v1: boolean): Record<string, unknown> {
  return {
    'x-correlation-id': header('CorrelationId'),
    'Ingest-Environment': header('IngestEnvironment'),
    ...(v1 ? { Deprecation: header('Deprecation'), Link: header('Link') } : {}),
  };
}

const codes = (status: number) =>
  Object.entries(PROBLEM_TYPES)
    .filter(([, p]) => p.status === status)
    .map(([code]) => `\`/problems/${code}\``);

export function problem(
  status: number,
  description: string,
  v1: boolean,
  headers: Record<string, unknown> = {},
  only?: readonly string[],
) {
  const types = only ? only.map((code) => `\`/problems/${code}\``) : codes(status);
  return {
    description: `${types.join(' or ')}: ${description}`,
    headers: { ...common(v1), ...headers },
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

const rateLimit = { RateLimit: header('RateLimit'), 'RateLimit-Policy': header('RateLimitPolicy') };
const retryAfter = { 'Retry-After': header('RetryAfter') };

/** Every answer of a batch POST, `202` first. */
export function batchResponses(v1: boolean): Record<string, unknown> {
  return {
    '202': {
      description:
        'Every record passed and the broker confirmed every message. An idempotent replay answers the stored `202` with `Idempotent-Replayed: true`.',
      headers: { ...common(v1), ...rateLimit, 'Idempotent-Replayed': header('IdempotentReplayed') },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/BulkResponse' } } },
    },
    '400': problem(
      400,
      '`errors` lists every failing record. Nothing is accepted. Replayed for the same `Idempotency-Key`.',
      v1,
      rateLimit,
      ['validation-failed', 'malformed-body', 'invalid-idempotency-key'],
    ),
    '401': problem(401, 'credentials missing or wrong.', v1, {
      'WWW-Authenticate': header('WwwAuthenticate'),
    }),
    '405': problem(405, 'this path takes POST only.', v1, { Allow: header('Allow') }),
    '408': problem(408, 'the request did not arrive in time. Send it again.', v1),
    '409': problem(
      409,
      'a request with this `Idempotency-Key` is still in flight.',
      v1,
      retryAfter,
    ),
    '413': problem(413, 'body or record count over the limit stated in `detail`.', v1, rateLimit),
    '415': problem(415, '`Content-Type` not taken by this endpoint.', v1, rateLimit),
    '422': problem(422, 'this `Idempotency-Key` was used for another request.', v1, {}, [
      'idempotency-key-reused',
    ]),
    '429': problem(429, 'rate limit, batches in flight or failed logins.', v1, {
      ...retryAfter,
      ...rateLimit,
    }),
    '431': problem(431, 'header section over the limit.', v1),
    '500': problem(500, 'a bug; the body says only that it was logged.', v1),
    '503': problem(
      503,
      'nothing is accepted; retrying the same batch is safe (same message ids).',
      v1,
      retryAfter,
      ['publish-failed', 'shutting-down', 'decoders-busy'],
    ),
  };
}

/** The answers of a GET that needs no credentials: only what every request can meet. */
export const openResponses = {
  '400': {
    description: '`/problems/malformed-body`: the request URL is malformed.',
    headers: { 'x-correlation-id': header('CorrelationId') },
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  },
  '431': {
    description: '`/problems/header-fields-too-large`: the header section is over the limit.',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  },
  '503': {
    description: '`/problems/shutting-down`: the service is stopping.',
    headers: { 'x-correlation-id': header('CorrelationId'), 'Retry-After': header('RetryAfter') },
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  },
};
