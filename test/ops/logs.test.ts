import { copyFileSync, mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createLogger } from '../../src/log.js';
import { runPipelineFile } from '../../src/cli/run.js';
import { validRecords } from '../records/fixtures.js';
import { ACME, basicAuth, createTestApp, LogCapture, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const orders = validRecords('sales-orders');

describe('log lines of a request', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const linesOf = (correlationId: string) =>
    t.logs.lines.filter((line) => line.correlationId === correlationId);

  it('carry correlation id, business and kind on every line of an accepted v2 batch', async () => {
    expect(
      (
        await t.post('sales-orders', orders.slice(0, 1), {
          headers: { 'x-correlation-id': 'log-v2-accepted', 'user-agent': 'partner-erp/4.2' },
        })
      ).status,
    ).toBe(202);
    const lines = linesOf('log-v2-accepted');
    expect(lines.map((l) => l.msg)).toEqual(['batch in flight', 'batch accepted']);
    for (const line of lines)
      expect(line).toMatchObject({
        service: 'warehouse-ingest',
        correlationId: 'log-v2-accepted',
        businessId: 'ACME',
        kind: 'sales-orders',
        // Who asked: the client's address (no socket under app.request) and its user agent.
        client: expect.any(String),
        userAgent: 'partner-erp/4.2',
      });
  });

  it('carry them, the api version and nothing twice on a refused v1 CSV batch', async () => {
    const csv =
      'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice\nACME,SO-1,2026-03-02,1,SKU-1,3x,EA,1\n';
    const response = await t.post('/api/v1/sales-orders', null, {
      raw: csv,
      headers: { 'content-type': 'text/csv', 'x-correlation-id': 'log-v1-refused' },
    });
    expect(response.status).toBe(400);
    const lines = linesOf('log-v1-refused');
    expect(lines.map((l) => l.msg)).toEqual([
      'batch in flight',
      'batch rejected',
      'request refused',
    ]);
    for (const line of lines)
      expect(line).toMatchObject({
        correlationId: 'log-v1-refused',
        businessId: 'ACME',
        kind: 'sales-orders',
        api: 'v1',
      });
    // pino writes a key given both as a binding and a field twice: one JSON line, two values.
    for (const raw of t.logs.raw.filter((r) => r.includes('log-v1-refused')))
      expect(raw.match(/"businessId"/g)).toHaveLength(1);
  });

  it('log the documented 501 of GET …/stock at info, not as an error that would page someone', async () => {
    const response = await t.app.request('/api/v1/customer/ACME/stock', {
      headers: { authorization: basicAuth(ACME), 'x-correlation-id': 'log-501' },
    });
    expect(response.status).toBe(501);
    expect(linesOf('log-501').map((l) => [l.level, l.msg])).toContainEqual([
      'info',
      'request refused',
    ]);
    expect(linesOf('log-501').filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
  });

  it('carry the correlation id on a refusal before authentication, and never the credentials', async () => {
    const wrong = `Basic ${Buffer.from(`${ACME.businessId}:not-the-key-5b1e`).toString('base64')}`;
    expect(
      (
        await t.post('sales-orders', orders, {
          auth: wrong,
          headers: { 'x-correlation-id': 'log-401' },
        })
      ).status,
    ).toBe(401);
    expect(linesOf('log-401').map((l) => l.msg)).toEqual(['login failed', 'request refused']);
    // The business id that was tried is logged (not bound as businessId: it was not authenticated).
    expect(linesOf('log-401')[0]).toMatchObject({ triedBusinessId: ACME.businessId });
    expect(linesOf('log-401')[0]).not.toHaveProperty('businessId');
    const all = t.logs.raw.join('\n');
    for (const secret of [
      ACME.apiKey,
      'not-the-key-5b1e',
      basicAuth(ACME).slice(6),
      wrong.slice(6),
    ])
      expect(all).not.toContain(secret);
  });
});

describe('redaction', () => {
  it('censors credentials wherever a log object carries them', () => {
    const capture = new LogCapture();
    const log = createLogger({ destination: capture });
    log.info(
      {
        authorization: 'Basic c2VjcmV0',
        headers: { authorization: 'Basic c2VjcmV0' },
        source: {
          password: 'pw-1',
          privateKey: 'key-1',
          passphrase: 'pp-1',
          secretAccessKey: 'sak-1',
        },
        apiKey: 'k-1',
        url: 'amqp://u:p@h',
        listening: { url: 'http://127.0.0.1:3000' },
      },
      'x',
    );
    expect(capture.lines[0]).toMatchObject({
      authorization: '[redacted]',
      headers: { authorization: '[redacted]' },
      source: {
        password: '[redacted]',
        privateKey: '[redacted]',
        passphrase: '[redacted]',
        secretAccessKey: '[redacted]',
      },
      apiKey: '[redacted]',
      // A URL keeps what it is for (where), only its credentials go.
      url: 'amqp://***@h',
      listening: { url: 'http://127.0.0.1:3000' },
    });
    for (const secret of ['c2VjcmV0', 'pw-1', 'key-1', 'pp-1', 'sak-1', 'k-1', 'u:p'])
      expect(capture.raw[0]).not.toContain(secret);
  });

  it("censors a child logger's bindings, an error's own fields, and a nested object's headers, changing none of them", () => {
    const capture = new LogCapture();
    const child = createLogger({ destination: capture }).child({
      token: 't-1',
      broker: 'amqp://user:hunter2@mq:5672',
      source: { apiKeyHash: 'h-1' },
    });
    const error = Object.assign(new TypeError('connect failed'), {
      url: 'https://u:pw-2@s3.example/bucket',
      secretAccessKey: 'sak-2',
    });
    const request = {
      headers: { authorization: 'Basic c2VjcmV0Mg==', cookie: 'sid=c-1', accept: '*/*' },
    };
    child.warn({ err: error, request }, 'y');
    expect(capture.lines[0]).toMatchObject({
      token: '[redacted]',
      broker: 'amqp://***@mq:5672',
      source: { apiKeyHash: '[redacted]' },
      err: {
        type: 'TypeError',
        message: 'connect failed',
        stack: expect.stringContaining('TypeError: connect failed'),
        url: 'https://***@s3.example/bucket',
        secretAccessKey: '[redacted]',
      },
      request: { headers: { authorization: '[redacted]', cookie: '[redacted]', accept: '*/*' } },
    });
    for (const secret of ['t-1', 'hunter2', 'h-1', 'pw-2', 'sak-2', 'c2VjcmV0Mg', 'c-1'])
      expect(capture.raw[0]).not.toContain(secret);
    // What was logged is the caller's own: censored in the line only.
    expect(error.secretAccessKey).toBe('sak-2');
    expect(request.headers.authorization).toBe('Basic c2VjcmV0Mg==');
  });
});

describe('RabbitMQ lines', () => {
  it('name the broker once, without its password', async () => {
    const t = await createTestApp();
    try {
      const connected = t.logs.raw.filter((r) => r.includes('connected to the message broker'));
      expect(connected).toHaveLength(1);
      expect(connected[0]!.match(/"broker"/g)).toHaveLength(1);
      expect(JSON.parse(connected[0]!)).toMatchObject({
        component: 'rabbitmq',
        broker: expect.stringMatching(/^amqp:\/\/\*\*\*@127\.0\.0\.1/),
      });
      expect(connected[0]).not.toContain('guest:guest');
    } finally {
      await t.close();
    }
  });
});

describe('LOG_FORMAT=pretty', () => {
  it('writes one readable line per entry: time, level, message, fields; a stack on its own lines', () => {
    const out: string[] = [];
    const log = createLogger({ format: 'pretty', destination: { write: (t) => void out.push(t) } });
    log.info({ pipeline: 'acme', records: 3, url: 'amqp://u:p@mq' }, 'file accepted');
    log.error({ err: new Error('boom') }, 'failed');
    expect(out[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}file accepted {2}pipeline=acme records=3 url=amqp:\/\/\*\*\*@mq\n$/,
    );
    expect(out[1]).toMatch(/^\S+ ERROR failed {2}err=.*\nError: boom\n\s+at /);
  });
});

describe('log lines of a dropped file', () => {
  it('carry pipeline, file name, business, kind and the batch correlation id', async () => {
    const folder = tempFolder('logs-drop-');
    mkdirSync(`${folder.dir}/drop`);
    copyFileSync(
      new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
      `${folder.dir}/drop/orders-1.json`,
    );
    const pipeline = folder.write(
      'demo.yaml',
      stringify({
        name: 'demo-orders',
        businessId: 'DEMO',
        kind: 'sales-orders',
        format: 'v2-json',
        source: { type: 'local', path: `${folder.dir}/drop` },
        readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
      }),
    );
    const config = folder.write('config.yaml', stringify({ dataDirectory: `${folder.dir}/data` }));
    const logs = new LogCapture();
    const { summary } = await runPipelineFile(pipeline, {
      once: true,
      log: createLogger({ destination: logs }),
      env: { INGEST_ENV: 'development', INGEST_CONFIG: config },
    });
    expect(summary).toMatchObject({ accepted: 1 });
    const fileLines = logs.lines.filter((l) => l.file === 'orders-1.json');
    expect(fileLines.map((l) => l.msg)).toEqual(['batch accepted', 'file accepted']);
    for (const line of fileLines)
      expect(line).toMatchObject({
        pipeline: 'demo-orders',
        businessId: 'DEMO',
        kind: 'sales-orders',
        correlationId: expect.any(String),
      });
    expect(new Set(fileLines.map((l) => l.correlationId)).size).toBe(1);
  });
});
