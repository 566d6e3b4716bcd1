import { SpanKind, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig, webhook } from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

/**
 * With an operator's OpenTelemetry SDK registered, each webhook attempt is a client span of the
 * event's trace, and the POST's traceparent names it. In a file of its own: the SDK is global.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const SECRET = testSecret(10);
const open = closedAfterEach();

beforeAll(() => {
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
});
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});

describe('webhook attempts with an OpenTelemetry SDK registered', () => {
  it("records a client span per attempt, child of the event's span; the POST carries it", async () => {
    const receiver = await startWebhookReceiver([SECRET]);
    open.push(receiver);
    receiver.setBehaviour(() => 204);
    const harness = await startEventsHarness({
      events: testEventsConfig(),
      env: { ACME_KEY: SECRET },
      tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME_KEY')] }],
    });
    open.push(harness);
    const caller = { trace: '0af7651916cd43dd8448eb211c80319c', span: 'b7ad6b7169203331' };
    await harness.publishRaw('sales-order.shipped.ACME', Buffer.from('{}'), {
      messageId: 'evt-sdk',
      type: 'sales-order.shipped',
      headers: { 'business-id': 'ACME', traceparent: `00-${caller.trace}-${caller.span}-01` },
    });
    await expect.poll(() => exporter.getFinishedSpans().length).toBe(1);
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).toBe('POST');
    expect(span!.kind).toBe(SpanKind.CLIENT);
    expect(span!.spanContext().traceId).toBe(caller.trace);
    expect(span!.parentSpanContext?.spanId).toBe(caller.span);
    expect(span!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'http.response.status_code': 204,
      'warehouse_ingest.event_type': 'sales-order.shipped',
      'warehouse_ingest.outcome': 'delivered',
    });
    expect(receiver.received[0]?.headers.traceparent).toBe(
      `00-${caller.trace}-${span!.spanContext().spanId}-01`,
    );
  });
});
