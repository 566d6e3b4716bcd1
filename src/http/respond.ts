import type { H3Event } from 'h3';
import type { Registry } from 'prom-client';
import { FastResponse } from 'srvx';
import { timeOrderedId } from '../ids.js';
import { PROBLEM_MEDIA_TYPE, reasonPhrase, toProblem, type ProblemDetails } from '../errors.js';
import type { Logger } from '../log.js';
import { requestTrace, type Trace } from '../tracing.js';

/**
 * Per-request facts kept on the event, so error responses and logs can use them too. The
 * request's logger is made on first use, once the handler knows the business and the kind:
 * one child logger per request, every line carrying all of them.
 */
export class RequestContext {
  businessId?: string;
  kind?: string;
  api?: string;
  /** The client's address, once admission has worked it out (see `http.trustProxyHops`). */
  client?: string;
  /** Headers for every answer to this request once known, e.g. the business's `RateLimit`. */
  headers: Record<string, string> = {};
  readonly started = performance.now();
  private logger?: Logger;
  private traced?: Trace;

  constructor(
    readonly correlationId: string,
    private readonly base: Logger,
    /** The User-Agent header, cut to 200 characters (a log line is no place for a novel). */
    readonly userAgent?: string,
    /** The request's headers, read for `traceparent` only when the trace is first needed. */
    private readonly requestHeaders?: Headers,
  ) {}

  /** The request's trace (W3C): the caller's `traceparent` continued, or a new one; made on first use. */
  get trace(): Trace {
    const headers = this.requestHeaders;
    return (this.traced ??= requestTrace(
      headers?.get('traceparent'),
      headers?.get('tracestate'),
      this.started,
    ));
  }

  /** The trace, only if something already made it (the answer ends it). */
  get traceIfBegun(): Trace | undefined {
    return this.traced;
  }

  get log(): Logger {
    return (this.logger ??= this.base.child({
      correlationId: this.correlationId,
      traceId: this.trace.traceId,
      ...(this.client !== undefined ? { client: this.client } : {}),
      ...(this.userAgent !== undefined ? { userAgent: this.userAgent } : {}),
      ...(this.businessId !== undefined ? { businessId: this.businessId } : {}),
      ...(this.kind !== undefined ? { kind: this.kind } : {}),
      ...(this.api !== undefined ? { api: this.api } : {}),
    }));
  }
}

// Printable ASCII, no spaces: safe to echo in a header and a log line.
const CORRELATION_ID = /^[\x21-\x7e]{1,128}$/;

export function requestContext(event: H3Event, log: Logger): RequestContext {
  const existing = event.context.request as RequestContext | undefined;
  if (existing) return existing;
  const sent = event.req.headers.get('x-correlation-id');
  const userAgent = event.req.headers.get('user-agent');
  const context = new RequestContext(
    sent !== null && CORRELATION_ID.test(sent) ? sent : timeOrderedId(),
    log,
    userAgent === null ? undefined : userAgent.slice(0, 200),
    event.req.headers,
  );
  if (sent !== null && sent !== context.correlationId)
    log.debug(
      { correlationId: context.correlationId },
      'x-correlation-id was not printable ASCII of 1-128 characters; replaced',
    );
  event.context.request = context;
  return context;
}

/**
 * An answer whose body is text the service made: the text stays at hand (`bodyText`), so an
 * idempotent claim stores it without reading the body back, and srvx writes it to the socket as
 * it is. `FastResponse` is srvx's Node-side Response: on Node it skips building a web `Response`,
 * its `Headers` and a body stream per answer, which was ~10% of a 1-record batch's CPU.
 */
export type TextResponse = Response & { readonly bodyText: string };

export function textResponse(
  status: number,
  statusText: string,
  bodyText: string,
  headers: Record<string, string>,
): TextResponse {
  return Object.assign(new FastResponse(bodyText, { status, statusText, headers }), { bodyText });
}

export function jsonResponse(
  status: number,
  body: unknown,
  context: RequestContext,
  extraHeaders: Record<string, string>,
): TextResponse {
  return textResponse(status, reasonPhrase(status), JSON.stringify(body), {
    'content-type': 'application/json',
    'x-correlation-id': context.correlationId,
    'cache-control': 'no-store',
    ...context.headers,
    ...extraHeaders,
  });
}

/** Prometheus text exposition of one registry (the app's own, never the process-global one). */
export async function metricsResponse(
  registry: Registry,
  context: RequestContext,
  extraHeaders: Record<string, string>,
): Promise<Response> {
  return new Response(await registry.metrics(), {
    status: 200,
    statusText: 'OK',
    headers: {
      'content-type': registry.contentType,
      'x-correlation-id': context.correlationId,
      'cache-control': 'no-store',
      ...extraHeaders,
    },
  });
}

/**
 * The one place an error becomes an HTTP answer (and a log line, unless `logged` is false: a
 * probe answered 503 every few seconds logs its changes of state itself).
 */
export function problemResponse(
  error: unknown,
  event: H3Event,
  context: RequestContext,
  extraHeaders: Record<string, string>,
  logged = true,
): TextResponse {
  const { problem, headers } = toProblem(error, event.url.pathname);
  if (logged) logProblem(error, problem, event, context);
  return textResponse(problem.status, problem.title, JSON.stringify(problem), {
    'content-type': PROBLEM_MEDIA_TYPE,
    'x-correlation-id': context.correlationId,
    'cache-control': 'no-store',
    ...context.headers,
    ...headers,
    ...extraHeaders,
  });
}

/**
 * What a 503 was for, by its problem type, for the log line an operator searches: each names the
 * part that was away (the broker, Redis, the history …), so an outage of one is not read as another.
 */
const UNAVAILABLE: Readonly<Record<string, string>> = {
  '/problems/publish-failed': 'publisher unavailable (the message broker did not take the batch)',
  '/problems/idempotency-unavailable': 'shared state unavailable (Redis did not answer)',
  '/problems/history-unavailable': 'history unavailable (its database did not answer)',
  '/problems/decoders-busy': 'every decoder of compressed bodies is busy',
  '/problems/drop-unavailable': 'the drop store is unavailable',
  '/problems/local-resources-exhausted': 'local disk or file descriptors exhausted',
  '/problems/interrupted': 'interrupted by the stop',
  '/problems/not-ready': 'not ready',
};

function logProblem(
  error: unknown,
  problem: ProblemDetails,
  event: H3Event,
  context: RequestContext,
): void {
  // The business id is a binding of the request's logger already; a field too would print it twice.
  const fields = {
    status: problem.status,
    code: problem.type,
    method: event.req.method,
    path: event.url.pathname,
  };
  // 501 is the documented answer of an endpoint with nothing behind it yet, not a failure: info.
  if (problem.status >= 500 && problem.status !== 503 && problem.status !== 501)
    context.log.error({ ...fields, err: error }, 'request failed');
  else if (problem.type === '/problems/shutting-down')
    context.log.info(fields, 'request refused: the service is stopping');
  else if (problem.status === 503)
    context.log.warn(
      { ...fields, err: error },
      `request not accepted: ${UNAVAILABLE[problem.type] ?? 'the service is unavailable'}`,
    );
  else context.log.info({ ...fields, detail: problem.detail }, 'request refused');
}
