import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createLogger } from '../../src/log.js';
import { parseTraceparent } from '../../src/tracing.js';
import { ordersCsv, PROFILE } from '../drops/stores/drop-contract.js';
import { validRecords } from '../records/fixtures.js';
import { createTestApp, LogCapture, type TestApp } from '../support/http-app.js';
import { localFixture } from '../support/local-fixture.js';
import { useRealIngest } from '../support/real-ingest.js';
import { tempFolder } from '../support/temp.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** traceparent of a published message, split into its parts. */
function traceOf(headers: Record<string, unknown> | undefined) {
  const value = headers?.traceparent;
  expect(value, 'the message carries a traceparent').toMatch(TRACEPARENT);
  const [, traceId, parentId, flags] = TRACEPARENT.exec(String(value))!;
  return { traceId: traceId!, parentId: parentId!, flags: flags! };
}

describe('traceparent (W3C Trace Context)', () => {
  it('takes version 00 and later versions with more fields; refuses zero ids, upper case and version ff', () => {
    expect(parseTraceparent(`00-${CALLER_TRACE}-${CALLER_SPAN}-01`, 'vendor=abc')).toEqual({
      traceId: CALLER_TRACE,
      spanId: CALLER_SPAN,
      flags: '01',
      tracestate: 'vendor=abc',
    });
    expect(parseTraceparent(`01-${CALLER_TRACE}-${CALLER_SPAN}-00-extra`)?.traceId).toBe(
      CALLER_TRACE,
    );
    for (const bad of [
      `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`,
      `00-${CALLER_TRACE}-${'0'.repeat(16)}-01`,
      `00-${CALLER_TRACE.toUpperCase()}-${CALLER_SPAN}-01`,
      `ff-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      `00-${CALLER_TRACE}-${CALLER_SPAN}-01-extra`,
      'garbage',
      '',
    ])
      expect(parseTraceparent(bad), bad).toBeUndefined();
  });
});

describe('a trace from HTTP to the AMQP message (real RabbitMQ)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());
  const orders = validRecords('sales-orders');

  it("continues the caller's trace: same trace id, our span as the parent, flags and tracestate kept; the request's log lines name the trace", async () => {
    const response = await t.post('sales-orders', orders.slice(0, 2), {
      headers: {
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
        tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
        'x-correlation-id': 'trace-http-1',
      },
    });
    expect(response.status).toBe(202);
    const messages = await t.topology.messages();
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      const trace = traceOf(message.properties.headers);
      expect(trace.traceId).toBe(CALLER_TRACE);
      expect(trace.parentId).not.toBe(CALLER_SPAN); // the caller's span is our parent, not the consumer's
      expect(trace.flags).toBe('01');
      expect(message.properties.headers?.tracestate).toBe(
        'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
      );
    }
    // Every message of the batch has the same parent: one span, the request.
    expect(new Set(messages.map((m) => m.properties.headers?.traceparent)).size).toBe(1);
    const lines = t.logs.lines.filter((l) => l.correlationId === 'trace-http-1');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.traceId).toBe(CALLER_TRACE);
  });

  it('begins a trace when none (or an invalid one) is sent, the same id in the log and on the message', async () => {
    for (const [n, headers] of [
      [2, {}],
      [3, { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`, tracestate: 'dropped=1' }],
    ] as const) {
      const correlationId = `trace-http-${n}`;
      const response = await t.post('sales-orders', orders.slice(0, 1), {
        headers: { ...headers, 'x-correlation-id': correlationId },
      });
      expect(response.status).toBe(202);
      const [message] = await t.topology.messages();
      const trace = traceOf(message!.properties.headers);
      expect(trace.traceId).not.toBe('0'.repeat(32));
      expect(trace.flags).toBe('00'); // nothing recorded it: not sampled
      expect(message!.properties.headers).not.toHaveProperty('tracestate');
      const line = t.logs.lines.find((l) => l.correlationId === correlationId);
      expect(line?.traceId).toBe(trace.traceId);
    }
  });

  it('names the trace on a refused request too (401)', async () => {
    const response = await t.post('sales-orders', orders.slice(0, 1), {
      auth: null,
      headers: {
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
        'x-correlation-id': 'trace-http-401',
      },
    });
    expect(response.status).toBe(401);
    const line = t.logs.lines.find((l) => l.correlationId === 'trace-http-401');
    expect(line?.traceId).toBe(CALLER_TRACE);
  });
});

describe('a trace per dropped file (real local drop, real RabbitMQ)', () => {
  const real = useRealIngest();
  const fixture = localFixture('trace-drop-');
  const spool = tempFolder('trace-spool-');

  it("writes one trace per file on every message it publishes and on the file's log lines", async () => {
    const f = await fixture();
    const logs = new LogCapture();
    const runner = createDropRunner({
      pipeline: pipelineSchema.parse({
        name: 'trace-drop',
        businessId: 'ACME',
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: '/unused' },
        readiness: { strategy: 'rename' },
      }),
      store: f.store,
      ingest: real.ingest,
      onboarding: { ACME: { 'sales-orders': PROFILE } },
      log: createLogger({ level: 'debug', destination: logs }),
      spoolDirectory: spool.dir,
    });
    await f.put('first.csv', ordersCsv('TRA', 2));
    await f.put('second.csv', ordersCsv('TRB', 3));
    const summary = await runner.runOnce();
    expect(summary.accepted).toBe(2);

    const messages = await real.topology.messages();
    expect(messages).toHaveLength(5);
    const traces = new Map<string, string>();
    for (const message of messages) {
      const { traceId } = traceOf(message.properties.headers);
      const order = (message.content as { identifiers: { shipmentId: string } }).identifiers
        .shipmentId;
      traces.set(order.slice(0, 3), traceId);
      expect(traceId).toBe(traces.get(order.slice(0, 3)));
    }
    expect(traces.size).toBe(2);
    expect(traces.get('TRA')).not.toBe(traces.get('TRB'));
    for (const [file, tag] of [
      ['first.csv', 'TRA'],
      ['second.csv', 'TRB'],
    ] as const) {
      const lines = logs.lines.filter((l) => l.file === file);
      expect(lines.length, file).toBeGreaterThan(0);
      for (const line of lines) expect(line.traceId, `${file}: ${line.msg}`).toBe(traces.get(tag));
    }
  });
});
