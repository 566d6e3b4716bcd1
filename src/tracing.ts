import { randomFillSync } from 'node:crypto';
import {
  createTraceState,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace as otel,
  type Attributes,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';

/**
 * W3C Trace Context for every batch: one trace per HTTP request and one per try of a dropped
 * file; each webhook attempt continues its event's trace. The trace id goes on the log lines of the request or file, and `traceparent` (with
 * `tracestate` when the caller sent one) on every AMQP message the batch publishes, so a
 * consumer continues the same trace.
 *
 * Without an OpenTelemetry SDK nothing is recorded and no span object is made: a caller's
 * `traceparent` is continued with a span id of ours, or a new trace id is made (W3C format), so
 * logs and messages still correlate. With an SDK registered (an operator's `--import` file, see
 * docs/operations.md#tracing) each request and file try is a span of `@opentelemetry/api`, and
 * the SDK's exporter sends it wherever the operator says.
 */
export interface Trace {
  /** 32 lowercase hex digits. */
  readonly traceId: string;
  /** The `traceparent` to send on: this trace, with our span as the parent. */
  readonly traceparent: string;
  /** The caller's `tracestate`, passed on unchanged; absent when none was sent. */
  readonly tracestate?: string;
  /** Ends the span (an SDK records it); a no-op without an SDK. */
  end(outcome: TraceEnd): void;
}

export interface TraceEnd {
  /** The span's final name, e.g. `POST /api/v2/sales-orders` (the route template, never the raw URL). */
  readonly name?: string;
  readonly attributes?: Attributes;
  /** The request or file failed on our side (5xx, a file not processed). */
  readonly failed?: boolean;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// A later version may append fields after the first four; only those four are read (W3C §4.3).
const LATER_VERSION =
  /^([0-9a-e][0-9a-f]|f[0-9a-e])-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;
const ZEROS_32 = '0'.repeat(32);
const ZEROS_16 = '0'.repeat(16);
// tracestate: at most 32 list members of printable ASCII (W3C §3.3); anything else is dropped, not repaired.
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** A caller's trace, when its `traceparent` is valid W3C; otherwise undefined (a new trace is begun). */
export interface ParentTrace {
  readonly traceId: string;
  readonly spanId: string;
  readonly flags: string;
  readonly tracestate?: string;
}

export function parseTraceparent(
  traceparent: string | null | undefined,
  tracestate?: string | null,
): ParentTrace | undefined {
  if (!traceparent) return undefined;
  // Version 00 is exactly 55 characters; a later version may be longer.
  const match = traceparent.startsWith('00-')
    ? VERSION_00.exec(traceparent)
    : LATER_VERSION.exec(traceparent);
  if (!match) return undefined;
  const offset = match.length === 4 ? 1 : 2;
  const traceId = match[offset]!;
  const spanId = match[offset + 1]!;
  if (traceId === ZEROS_32 || spanId === ZEROS_16) return undefined;
  return {
    traceId,
    spanId,
    flags: match[offset + 2]!,
    ...(tracestate && TRACESTATE.test(tracestate) ? { tracestate } : {}),
  };
}

/** The trace of one HTTP request: the caller's continued, or a new one. */
export function requestTrace(
  traceparent: string | null | undefined,
  tracestate: string | null | undefined,
  startTime: number,
): Trace {
  return begin(
    parseTraceparent(traceparent, tracestate),
    SpanKind.SERVER,
    'HTTP request',
    startTime,
  );
}

/**
 * One attempt to deliver an event to a webhook: a client span continuing the event's trace (its
 * `traceparent` as the warehouse sent it), or a new trace when the event carried none. Its
 * `traceparent` goes on the POST, so the receiver continues the trace from this attempt.
 */
export function deliveryTrace(parent: ParentTrace | undefined): Trace {
  return begin(parent, SpanKind.CLIENT, 'POST', performance.now());
}

/** A new trace for one try of a dropped file. */
export function fileTrace(pipeline: string): Trace {
  return begin(undefined, SpanKind.CONSUMER, `file ${pipeline}`, performance.now());
}

const NOTHING_TO_END = () => undefined;
// The API's own no-op provider: what the proxy delegates to until an SDK registers one.
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** The SDK's tracer, or undefined when none is registered (checked each time: a property read). */
function sdkTracer(): Tracer | undefined {
  const provider = otel.getTracerProvider();
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate === NOOP_PROVIDER ? undefined : provider.getTracer('warehouse-ingest');
}

function begin(
  parent: ParentTrace | undefined,
  kind: SpanKind,
  name: string,
  startTime: number,
): Trace {
  const tracer = sdkTracer();
  if (tracer) return spanTrace(tracer, parent, kind, name, startTime);
  const traceId = parent?.traceId ?? randomId(16);
  // No SDK: nothing is recorded here, so a trace we begin is not marked sampled (flags 00).
  const traceparent = `00-${traceId}-${randomId(8)}-${parent?.flags ?? '00'}`;
  return parent?.tracestate
    ? { traceId, traceparent, tracestate: parent.tracestate, end: NOTHING_TO_END }
    : { traceId, traceparent, end: NOTHING_TO_END };
}

function spanTrace(
  tracer: Tracer,
  parent: ParentTrace | undefined,
  kind: SpanKind,
  name: string,
  startTime: number,
): Trace {
  const remote: SpanContext | undefined = parent && {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: Number.parseInt(parent.flags, 16),
    isRemote: true,
    ...(parent.tracestate ? { traceState: createTraceState(parent.tracestate) } : {}),
  };
  const span: Span = tracer.startSpan(
    name,
    { kind, startTime },
    remote ? otel.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT,
  );
  const context = span.spanContext();
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const tracestate = context.traceState?.serialize();
  return {
    traceId: context.traceId,
    traceparent: `00-${context.traceId}-${context.spanId}-${flags}`,
    ...(tracestate ? { tracestate } : {}),
    end({ name: finalName, attributes, failed }) {
      if (finalName) span.updateName(finalName);
      if (attributes) span.setAttributes(attributes);
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

// Ids come from a pool of random bytes filled 4 KiB at a time (as crypto.randomUUID does):
// one system call per ~170 requests instead of one per id.
const POOL = Buffer.allocUnsafe(4096);
let used = POOL.length;

function randomId(bytes: 8 | 16): string {
  if (used + bytes > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const hex = POOL.toString('hex', used, used + bytes);
  used += bytes;
  // All zeros is the one invalid id (W3C); its odds are 2^-64 at worst, but it is cheap to refuse.
  return hex === ZEROS_32 || hex === ZEROS_16 ? randomId(bytes) : hex;
}
