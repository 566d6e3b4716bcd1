import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { deliveryTrace } from '../../../tracing.js';
import type { WarehouseEvent } from '../../event.js';
import type { AttemptResult } from '../destination.js';
import { createDeadlines } from './deadlines.js';
import { signatureHeaders } from './sign.js';
import { assertPublicAddress, guardedLookup, resolvingLookup, type Resolver } from './ssrf.js';
import type { Endpoint } from '../../subscriptions.js';

export interface DelivererOptions {
  /** Connect, send, answer and capped body together. */
  readonly timeoutMs: number;
  readonly responseBodyLimitBytes: number;
  /** Resolves names for guarded endpoints; tests pass a stub. @default the system resolver */
  readonly resolver?: Resolver;
  readonly userAgent?: string;
}

export interface Deliverer {
  attempt(endpoint: Endpoint, event: WarehouseEvent): Promise<AttemptResult>;
  close(): Promise<void>;
}

/**
 * Two undici agents: one whose connector refuses non-public destinations (IP literals before
 * connecting, names on the resolved address at every new connection), one for endpoints that may
 * reach private networks (development, or `allowPrivateNetwork`). An agent keeps a keep-alive
 * pool per origin, so every endpoint reuses its own connections.
 */
export function createDeliverer(options: DelivererOptions): Deliverer {
  const connectTimeout = Math.min(options.timeoutMs, 10_000);
  // With a resolver given (tests), unguarded endpoints resolve through it too: no DNS leaves the host.
  const plainConnector = buildConnector({
    timeout: connectTimeout,
    ...(options.resolver ? { lookup: resolvingLookup(options.resolver) } : {}),
  });
  const lookupConnector = buildConnector({
    timeout: connectTimeout,
    lookup: guardedLookup(options.resolver),
  });
  const guardedConnector: buildConnector.connector = (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      try {
        assertPublicAddress(host, host);
      } catch (error) {
        return callback(error as Error, null);
      }
    }
    lookupConnector(connectOptions, callback);
  };
  const agentOptions = { keepAliveTimeout: 30_000, connections: 64 };
  const guarded = new Agent({ ...agentOptions, connect: guardedConnector });
  const open = new Agent({ ...agentOptions, connect: plainConnector });

  const deadlines = createDeadlines(options.timeoutMs);

  async function attempt(endpoint: Endpoint, event: WarehouseEvent): Promise<AttemptResult> {
    const body = event.body;
    const signal = deadlines.start();
    // Each attempt is a span of the event's trace (a new trace when the event came without one).
    const trace = deliveryTrace(event.trace);
    let result: AttemptResult | undefined;
    try {
      const headers = {
        'content-type': 'application/json',
        'user-agent': options.userAgent ?? 'warehouse-ingest-webhooks',
        traceparent: trace.traceparent,
        ...(trace.tracestate ? { tracestate: trace.tracestate } : {}),
        ...signatureHeaders(endpoint.keys, event.id, Math.floor(Date.now() / 1000), body),
      };
      const response = await request(endpoint.url, {
        method: 'POST',
        headers,
        body,
        dispatcher: endpoint.allowPrivateNetwork ? open : guarded,
        signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      const status = response.statusCode;
      // Read to the end (up to the cap) so the connection goes back to the pool; the start is
      // kept for the history (attempts' response excerpt).
      const excerpt = await readCapped(response.body, options.responseBodyLimitBytes);
      const kept = excerpt ? { excerpt: excerpt.slice(0, EXCERPT_CHARS) } : {};
      if (status >= 200 && status < 300)
        return (result = { outcome: 'delivered', status, ...kept });
      if (status === 410) return (result = { outcome: 'gone', status, ...kept });
      if (headerText(response.headers[ABORT_HEADER])?.toLowerCase() === 'abort-message')
        return (result = {
          outcome: 'aborted',
          status,
          reason: `HTTP ${status} with ${ABORT_HEADER}: abort-message${excerpt ? `: ${oneLine(excerpt)}` : ''}`,
          ...kept,
        });
      const redirect = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
      const retryAfterMs =
        status === 429 || status === 503
          ? parseRetryAfter(headerText(response.headers['retry-after']), Date.now())
          : undefined;
      return (result = {
        outcome: 'failed',
        status,
        reason: `HTTP ${status}${redirect}${excerpt ? `: ${oneLine(excerpt)}` : ''}`,
        ...kept,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    } catch (error) {
      // undici refuses a request it cannot build (a header value it cannot carry) before sending.
      if ((error as { code?: string })?.code === 'UND_ERR_INVALID_ARG')
        return (result = {
          outcome: 'rejected',
          reason: `Request not sent: ${oneLine((error as Error).message)}`,
        });
      return (result = { outcome: 'failed', reason: failureReason(error, options.timeoutMs) });
    } finally {
      deadlines.end(signal);
      const status = result && 'status' in result ? result.status : undefined;
      trace.end({
        attributes: {
          'http.request.method': 'POST',
          'server.address': endpoint.url.hostname,
          'warehouse_ingest.event_type': event.type,
          'warehouse_ingest.outcome': result?.outcome ?? 'failed',
          ...(status === undefined ? {} : { 'http.response.status_code': status }),
        },
        failed: result?.outcome !== 'delivered',
      });
    }
  }

  return {
    attempt,
    close: async () => {
      deadlines.close();
      await Promise.all([guarded.close(), open.close()]);
    },
  };
}

/** Characters of an answer's body an attempt reports (the history keeps as many: RESPONSE_EXCERPT_CHARS). */
const EXCERPT_CHARS = 1024;

/** A receiver's answer header: `abort-message` asks for no more attempts of this one event. */
const ABORT_HEADER = 'webhook-delivery';

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in ms from `now`: delay-seconds or an HTTP date (a date in
 * the past is 0); undefined when absent or neither.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Reads at most `limit` bytes, keeping the first few (enough for `EXCERPT_CHARS` characters),
 * then stops reading (the connection is dropped if more came).
 */
async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  limit: number,
): Promise<string> {
  const keep = Math.min(limit, EXCERPT_CHARS * 4);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < keep) chunks.push(chunk.subarray(0, keep - size));
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/** A reason safe to log and to keep in a dead letter's headers: no URL, no secret. */
function failureReason(error: unknown, timeoutMs: number): string {
  const err = error as { name?: string; code?: string; message?: string; cause?: unknown };
  if (err?.name === 'TimeoutError' || err?.code === 'UND_ERR_HEADERS_TIMEOUT')
    return `No answer within ${timeoutMs} ms`;
  if (err?.code === 'UND_ERR_BODY_TIMEOUT')
    return `Answer body not finished within ${timeoutMs} ms`;
  if (err?.name === 'DestinationRefused') return err.message ?? 'Destination refused';
  const cause = err?.cause as { name?: string; code?: string; message?: string } | undefined;
  if (cause?.name === 'DestinationRefused') return cause.message ?? 'Destination refused';
  const code = err?.code ?? cause?.code;
  return `Connection failed${code ? ` (${code})` : ''}: ${oneLine(err?.message ?? String(error))}`;
}
