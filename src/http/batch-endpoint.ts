import { createHash } from 'node:crypto';
import type { H3Event } from 'h3';
import { isIngestError, reasonPhrase } from '../errors.js';
import type { Batch, Ingest } from '../ingest/batch.js';
import type { RecordKind } from '../records/kind.js';
import type { Logger } from '../log.js';
import type { Admission } from './admission.js';
import type { Bulkhead } from '../ingest/bulkhead.js';
import { bodyChunks, bodyFormat, type BodyFormat, type DecodeGate } from './body.js';
import { parseIdempotencyKey, type IdempotencyStore, type StoredAnswer } from './idempotency.js';
import {
  jsonResponse,
  problemResponse,
  requestContext,
  textResponse,
  type RequestContext,
  type TextResponse,
} from './respond.js';

export interface HandlerDependencies {
  /** The shared pipeline. */
  readonly ingest: Ingest;
  /** Per business, batches being decoded, validated or published at once. */
  readonly bulkhead: Bulkhead;
  /** The process's decoders of compressed bodies. */
  readonly decoders: DecodeGate;
  readonly admission: Admission;
  readonly idempotency: IdempotencyStore;
  readonly log: Logger;
  readonly bodyLimitBytes: number;
  readonly maxRecordsPerBatch: number;
  /** Headers on every response, e.g. the sandbox marker. */
  readonly responseHeaders: Record<string, string>;
  /**
   * A fresh file name for the records of a streamed (CSV) body once they outgrow memory between
   * validation and publishing (`StreamBatch.spoolFile`). @default kept in memory
   */
  readonly spoolFile?: () => string;
}

/** What an endpoint adds to the common flow: its formats and how a body becomes a batch. */
export interface BatchEndpoint {
  readonly kind: RecordKind;
  readonly path: string;
  readonly api?: 'v1';
  readonly formats: readonly BodyFormat[];
  /** Headers on every answer of this endpoint (e.g. v1's deprecation). */
  readonly headers: Record<string, string>;
  /** The batch's records from the body, as a record array or a re-openable stream. */
  toBatch(
    format: BodyFormat,
    chunks: readonly Uint8Array[],
    businessId: string,
  ): DistributiveBatchBody;
}

type BatchBody<B> = B extends unknown
  ? Omit<B, 'kind' | 'businessId' | 'correlationId' | 'source' | 'log' | 'maxRecords'>
  : never;
export type DistributiveBatchBody = BatchBody<Batch>;

/** Outcomes a retry with the same key gets again: the accepted batch and the refusals of its content. */
const REPLAYABLE = new Set(['validation-failed', 'malformed-body', 'payload-too-large']);

/**
 * POST of a batch, the same for v1 and v2: admission (login throttle, auth, rate limit) → media
 * type → Idempotency-Key → a bulkhead slot → body (size-limited, decoded) → pipeline → answer.
 * The slot is held from the body's first byte to the answer, so a business's compressed bodies
 * are decoded within its own in-flight limit. Handlers stay declarative.
 */
export function batchHandler(endpoint: BatchEndpoint, deps: HandlerDependencies) {
  const handle = batchFlow(endpoint, deps);
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    context.kind = endpoint.kind.name;
    if (endpoint.api) context.api = endpoint.api;
    const format = bodyFormat(event, endpoint.formats);
    const key = parseIdempotencyKey(event.req.headers.get('idempotency-key'));
    const leave = deps.bulkhead.enter(businessId, context.log);
    try {
      return await handle(event, context, businessId, format, key);
    } finally {
      leave();
    }
  };
}

function batchFlow(endpoint: BatchEndpoint, deps: HandlerDependencies) {
  const headers = { ...deps.responseHeaders, ...endpoint.headers };
  return async (
    event: H3Event,
    context: RequestContext,
    businessId: string,
    format: BodyFormat,
    key: string | undefined,
  ): Promise<Response> => {
    const chunks = await bodyChunks(event, deps.bodyLimitBytes, deps.decoders);

    // Every batch ends in the flow (accepted, refused, unavailable), which tells the history:
    // a body that cannot be read as records too, so it is handed over as such.
    const run = async (): Promise<TextResponse> => {
      let body: DistributiveBatchBody;
      try {
        body = endpoint.toBatch(format, chunks, businessId);
      } catch (error) {
        body = { mode: 'array', records: [], unreadable: error };
      }
      // The body's part last: in V8 a literal that begins with a spread takes every later property
      // through a slow path (~8 µs here, measured), one that ends with it copies as fast as a literal.
      const accepted = await deps.ingest({
        kind: endpoint.kind,
        businessId,
        correlationId: context.correlationId,
        trace: context.trace,
        maxRecords: deps.maxRecordsPerBatch,
        source: { type: 'http', name: endpoint.path },
        log: context.log,
        ...body,
      });
      return jsonResponse(202, accepted, context, headers);
    };
    if (key === undefined) return run();

    const claiming = deps.idempotency.claim(
      businessId,
      key,
      fingerprint(endpoint.path, format, chunks),
    );
    const claim = claiming instanceof Promise ? await claiming : claiming;
    if (claim.replay) return replayed(claim.replay, context, headers);
    let response: TextResponse;
    try {
      response = await run();
    } catch (error) {
      if (!isIngestError(error) || !REPLAYABLE.has(error.code)) {
        await forget(claim.settle(undefined), context); // 429, 503, a bug: a retry must run again
        throw error;
      }
      response = problemResponse(error, event, context, headers);
    }
    // A shared store settles before the answer leaves, so a retry on any instance finds it.
    const settled = claim.settle(stored(response, context));
    if (settled instanceof Promise) await keepAnswer(settled, context);
    return response;
  };
}

/** The batch is answered whatever happens to its record: published is published. */
async function keepAnswer(settled: Promise<void>, context: RequestContext): Promise<void> {
  try {
    await settled;
  } catch (error) {
    context.log.warn(
      { error: (error as Error).message },
      'idempotency: the answer could not be stored; a retry after the in-flight time runs again (same message ids)',
    );
  }
}

async function forget(settled: void | Promise<void>, context: RequestContext): Promise<void> {
  if (settled instanceof Promise) await keepAnswer(settled, context);
}

function fingerprint(path: string, format: BodyFormat, chunks: readonly Uint8Array[]): string {
  const hash = createHash('sha256').update(`${path}\u0000${format}\u0000`);
  for (const chunk of chunks) hash.update(chunk);
  return hash.digest('base64');
}

function stored(response: TextResponse, context: RequestContext): StoredAnswer {
  return {
    status: response.status,
    correlationId: context.correlationId,
    contentType: response.headers.get('content-type') ?? 'application/json',
    body: response.bodyText,
  };
}

function replayed(
  answer: StoredAnswer,
  context: RequestContext,
  headers: Record<string, string>,
): Response {
  context.log.info(
    { status: answer.status, replayOf: answer.correlationId },
    'idempotent replay: the stored answer of the first request',
  );
  // The header names the request the body answers (the first one); this request's own id is in the log.
  return textResponse(answer.status, reasonPhrase(answer.status), answer.body, {
    'content-type': answer.contentType,
    'x-correlation-id': answer.correlationId,
    'cache-control': 'no-store',
    'idempotent-replayed': 'true',
    ...context.headers,
    ...headers,
  });
}
