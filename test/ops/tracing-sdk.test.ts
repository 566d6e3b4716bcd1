import { SpanKind, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { createTestApp, type TestApp } from '../support/http-app.js';

/**
 * An operator's OpenTelemetry SDK, registered as their `--import` file would (docs/operations.md,
 * Tracing): each request becomes a span the SDK exports, and the message carries that span.
 * In a file of its own: the SDK is process-global.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

let t: TestApp;
beforeAll(async () => {
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
  trace.disable();
  await provider.shutdown();
});

describe('with an OpenTelemetry SDK registered', () => {
  it('records a server span per request, child of the caller, named by the route template; the message carries it', async () => {
    const caller = { trace: '0af7651916cd43dd8448eb211c80319c', span: 'b7ad6b7169203331' };
    const response = await t.post('sales-orders', validRecords('sales-orders').slice(0, 1), {
      headers: { traceparent: `00-${caller.trace}-${caller.span}-01`, tracestate: 'k=v' },
    });
    expect(response.status).toBe(202);
    const [message] = await t.topology.messages();

    await expect.poll(() => exporter.getFinishedSpans().length).toBe(1);
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).toBe('POST /api/v2/sales-orders');
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.spanContext().traceId).toBe(caller.trace);
    expect(span!.parentSpanContext?.spanId).toBe(caller.span);
    expect(span!.attributes).toMatchObject({
      'http.route': '/api/v2/sales-orders',
      'http.response.status_code': 202,
    });
    expect(message!.properties.headers).toMatchObject({
      traceparent: `00-${caller.trace}-${span!.spanContext().spanId}-01`,
      tracestate: 'k=v',
    });
  });

  it('records refusals too, by route template (a 401 on an unknown path is "unmatched", never the raw URL)', async () => {
    exporter.reset();
    expect((await t.post('/api/v2/no-such-kind/123', [], { auth: null })).status).toBe(404);
    await expect.poll(() => exporter.getFinishedSpans().length).toBe(1);
    expect(exporter.getFinishedSpans()[0]!.name).toBe('POST unmatched');
  });
});
