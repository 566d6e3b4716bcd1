import { mkdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { killIfRunning, startServe, type CliWorker } from '../support/cli-worker.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from '../support/http-app.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';

/**
 * `warehouse-ingest serve` stopped with SIGTERM while a large batch is being published: that
 * batch still gets its 202 (its records all confirmed), a request that arrives afterwards gets
 * `503 shutting-down` (on a connection already open) or a refused connection (a new one) —
 * never another 5xx and never a connection dropped mid-answer — and the process exits 0.
 */
const ORDERS = 12_000; // two CSV lines, one v2 record each
const DEMO = DEMO_WITH_BROKER;

interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** A connection with a request begun (request line and a header) but not finished: the server counts it as in flight. */
function beginRequest(url: string): Promise<{ finish(rest: string): Promise<RawAnswer> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    const closed = new Promise<RawAnswer>((done, fail) => {
      socket.on('data', (data) => received.push(data));
      socket.on('error', fail);
      socket.on('close', () => {
        const raw = Buffer.concat(received).toString('utf8');
        const at = raw.indexOf('\r\n\r\n');
        const head = raw.slice(0, at).toLowerCase();
        const status = Number(head.split(' ')[1]);
        if (at === -1 || !status)
          return fail(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`));
        done({
          status,
          head,
          body: head.includes('transfer-encoding: chunked')
            ? unchunk(raw.slice(at + 4))
            : raw.slice(at + 4),
        });
      });
    });
    closed.catch(() => undefined);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write('POST /api/v2/sales-orders HTTP/1.1\r\nhost: localhost\r\n');
      resolve({
        finish(rest) {
          socket.write(rest);
          return closed;
        },
      });
    });
  });
}

/** A whole chunked body, decoded (throws if it was cut short: the answer must be complete). */
function unchunk(text: string): string {
  let out = '';
  for (let at = 0; ; ) {
    const eol = text.indexOf('\r\n', at);
    const size = parseInt(text.slice(at, eol), 16);
    if (eol === -1 || Number.isNaN(size)) throw new Error('chunked body cut short');
    if (size === 0) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

describe('the service stopped while a batch is in flight', () => {
  let topology: TestTopology;
  let service: CliWorker | undefined;
  beforeAll(async () => {
    topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'shutdown-http' });
  });
  afterAll(async () => {
    killIfRunning(service);
    await topology.cleanup();
  });

  it('answers the batch in flight 202, refuses what comes later with 503 or a refused connection, and exits 0', async () => {
    const temp = tempFolder('shutdown-http-');
    const pipelines = path.join(temp.dir, 'pipelines');
    mkdirSync(pipelines);
    const config = temp.write(
      'config.yaml',
      [
        `dataDirectory: ${temp.dir}/data`,
        `pipelinesDirectory: ${pipelines}`,
        'http:',
        '  bodyLimitBytes: 52428800',
        '  maxRecordsPerBatch: 100000',
        'broker:',
        `  exchange: ${topology.exchange}`,
        '  queues: []',
        'shutdown:',
        '  graceMs: 20000',
        await demoTenantYaml(),
      ].join('\n'),
    );
    const started = await startServe(config);
    service = started.service;
    const running = started.service;
    const { url } = started;
    // (/readyz would say 503: the test queue is declared by the test, not in the config.)
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const late = await beginRequest(url);
    const tag = `HTTPSTOP${Date.now().toString(36)}`;
    const inFlight = fetch(`${url}/api/v1/sales-orders`, {
      method: 'POST',
      headers: { 'content-type': 'text/csv', authorization: basicAuth(DEMO) },
      body: ordersCsv(tag, ORDERS).replaceAll('ACME,', 'DEMO,'),
    });
    inFlight.catch(() => undefined); // awaited below; a failure before then is reported there
    // Mid-publish: the broker holds some of its records.
    await expect.poll(() => topology.count(), { timeout: 60_000, interval: 20 }).toBeGreaterThan(0);
    const signalled = performance.now();
    running.child.kill('SIGTERM');
    await expect
      .poll(() => running.lines.some((l) => String(l.msg).startsWith('stopping:')), {
        timeout: 10_000,
        interval: 5,
      })
      .toBe(true);

    // A new connection (never one fetch keeps alive from the first /healthz): refused (or 503), never anything else.
    const fresh = await new Promise<number | string>((resolve) => {
      const request = http.get(`${url}/healthz`, { agent: false }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    // ECONNRESET: a connection the kernel had queued just as the listener closed is reset, unread
    // (seen once in CI) — refused all the same, with no answer that could be mistaken for one.
    expect([503, 'ECONNREFUSED', 'ECONNRESET']).toContain(fresh);
    // A request on a connection that was open when the stop began: a whole 503 answer, then the connection closes.
    const answer = await late.finish(
      `content-type: application/json\r\nauthorization: ${basicAuth(DEMO)}\r\ncontent-length: 2\r\n\r\n[]`,
    );
    expect(answer.status).toBe(503);
    expect(answer.head).toContain('retry-after: 5');
    expect(answer.head).toContain('connection: close');
    expect(JSON.parse(answer.body)).toMatchObject({ type: '/problems/shutting-down', status: 503 });

    // The batch in flight: its 202, every record confirmed.
    const response = await inFlight;
    expect(response.status).toBe(202);
    const accepted = (await response.json()) as { recordCount: number; messageIds: string[] };
    expect(accepted.recordCount).toBe(ORDERS);
    expect(await running.exited).toBe('code 0');
    const stopMs = Math.round(performance.now() - signalled);

    const messages = await drainQueue(AMQP_URL, topology.queue, 60_000);
    const audit = auditQueue(messages, (body) => JSON.parse(body).identifiers.shipmentId as string);
    expect(audit.duplicates).toBe(0);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(messages.map((m) => m.messageId)).toEqual(accepted.messageIds);
    expect(running.count('request refused: the service is stopping')).toBe(1);
    console.log(
      `[faults] shutdown of serve with a ${ORDERS}-record batch in flight: 202 kept, late request 503, new connection ${fresh}; stopped in ${stopMs} ms`,
    );
  }, 120_000);
});
