import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { nodeAddress } from '../../src/broker/connection.js';
import { AMQP_URL } from '../support/broker.js';
import {
  ACME,
  OTHER,
  basicAuth,
  createTestApp,
  type TestApp,
  answer,
  growingBody,
} from '../support/http-app.js';

const orders = validRecords('sales-orders');
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ yaml: 'http:\n  bodyLimitBytes: 65536\n  maxRecordsPerBatch: 50\n' });
});
afterAll(() => t.close());

async function problem(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const body = await answer(response);
  expect(body).toMatchObject({
    type: expect.stringMatching(/^\/problems\//),
    title: expect.any(String),
    status,
  });
  expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+/); // no stack trace
  return body;
}

describe('authentication', () => {
  it.each([
    ['missing', null],
    ['not Basic', 'Bearer abc'],
    ['malformed', 'Basic %%%'],
    ['unknown business', basicAuth({ businessId: 'NOBODY', apiKey: ACME.apiKey })],
    ['wrong key', basicAuth({ businessId: 'ACME', apiKey: 'not-the-key' })],
    ["another business's key", basicAuth({ businessId: 'ACME', apiKey: OTHER.apiKey })],
  ])(
    'answers 401 problem details with WWW-Authenticate for %s credentials',
    async (_name, auth) => {
      const response = await t.post('sales-orders', orders, { auth });
      const body = await problem(response, 401);
      expect(body.type).toBe('/problems/unauthorized');
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="warehouse-ingest"/);
      expect(JSON.stringify(body)).not.toContain(ACME.apiKey);
      expect(await t.topology.count()).toBe(0);
    },
  );

  it('authenticates before reading the body: an unauthenticated bad body is still 401', async () => {
    const response = await t.post('sales-orders', undefined, {
      auth: null,
      raw: '{not json',
      headers: { 'content-type': 'text/plain' },
    });
    await problem(response, 401);
  });

  it("lets OTHER post its own records and refuses it ACME's", async () => {
    const own = structuredClone(orders[0]!) as { identifiers: { businessId: string } };
    own.identifiers.businessId = 'OTHER';
    expect((await t.post('sales-orders', [own], { auth: basicAuth(OTHER) })).status).toBe(202);
    expect((await t.post('sales-orders', [orders[0]], { auth: basicAuth(OTHER) })).status).toBe(
      400,
    );
    const [message] = await t.topology.messages();
    expect(message!.routingKey).toBe('sales-orders.OTHER');
  });
});

describe('correlation ids', () => {
  it('adopts a sent id: body, response header and every log line of the request', async () => {
    const response = await t.post('sales-orders', orders, {
      headers: { 'x-correlation-id': 'trace-abc-123' },
    });
    expect(response.status).toBe(202);
    expect(response.headers.get('x-correlation-id')).toBe('trace-abc-123');
    expect((await answer(response)).correlationId).toBe('trace-abc-123');
    const lines = t.logs.lines.filter((line) => line.correlationId === 'trace-abc-123');
    expect(lines.map((line) => line.msg)).toContain('batch accepted');
    await t.topology.messages();
  });

  it.each([
    ['absent', undefined],
    ['too long', 'x'.repeat(129)],
    ['with spaces', 'a b'],
    ['non-ASCII', 'trace-ü'],
  ])('generates a time-ordered UUID (version 7) when the id is %s', async (_name, sent) => {
    const headers: Record<string, string> = sent === undefined ? {} : { 'x-correlation-id': sent };
    const before = Date.now();
    const response = await t.post('sales-orders', [{}], { headers });
    const id = response.headers.get('x-correlation-id')!;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const at = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });

  it('carries the correlation id on error answers too, and on their log lines', async () => {
    const response = await t.post('sales-orders', [{}], {
      headers: { 'x-correlation-id': 'trace-err-9' },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-correlation-id')).toBe('trace-err-9');
    expect(
      t.logs.lines.some(
        (line) => line.correlationId === 'trace-err-9' && line.msg === 'request refused',
      ),
    ).toBe(true);
  });
});

describe('bodies that are not a batch', () => {
  it.each([
    ['unparseable JSON', '{"a": [1, 2', /not valid JSON/],
    ['an object', '{"records": []}', /Expected a JSON array of records, received object/],
    ['a string', '"hello"', /received string/],
    ['null', 'null', /received null/],
    ['empty', '', /body is empty/],
    ['an empty array', '[]', /holds no records/],
    ['invalid UTF-8', Buffer.from([0x5b, 0xff, 0xfe, 0x5d]), /not valid UTF-8/],
  ])('answers 400 for %s', async (_name, raw, detail) => {
    const body = await problem(await t.post('sales-orders', undefined, { raw }), 400);
    expect(body.type).toBe('/problems/malformed-body');
    expect(body.detail).toMatch(detail);
  });

  it.each([
    ['text/plain'],
    ['application/xml'],
    ['text/csv'],
    ['application/json; charset=latin1'],
  ])('answers 415 for Content-Type %s', async (type) => {
    const body = await problem(
      await t.post('sales-orders', orders, { headers: { 'content-type': type } }),
      415,
    );
    expect(body.detail).toContain('application/json');
  });

  it('accepts application/json with charset=utf-8', async () => {
    const response = await t.post('sales-orders', orders, {
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(response.status).toBe(202);
    await t.topology.messages();
  });

  it('answers 413 for a body over the limit (declared length) and keeps serving', async () => {
    const big = JSON.stringify(Array.from({ length: 49 }, () => orders[0]));
    expect(big.length).toBeGreaterThan(65536);
    const body = await problem(await t.post('sales-orders', undefined, { raw: big }), 413);
    expect(body.detail).toContain('65536 bytes');
    expect((await t.post('sales-orders', orders)).status).toBe(202);
    await t.topology.messages();
  });

  it('answers 413 for a chunked body that grows past the limit', async () => {
    const stream = growingBody(orders[0], 200_000);
    const response = await t.app.request('/api/v2/sales-orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth(ACME) },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await problem(response, 413);
  });

  it('answers 413 for more records than the batch limit, stating the limit', async () => {
    const body = await problem(
      await t.post(
        'sales-orders',
        Array.from({ length: 51 }, () => ({})),
      ),
      413,
    );
    expect(body.detail).toContain('limit is 50 records per batch');
  });
});

describe('routes', () => {
  it('answers 404 problem details for an unknown path', async () => {
    const response = await t.app.request('/api/v3/sales-orders', { method: 'POST' });
    expect((await problem(response, 404)).instance).toBe('/api/v3/sales-orders');
  });

  it.each([['GET'], ['PUT'], ['DELETE']])(
    'answers 405 with Allow: POST for %s on a batch endpoint',
    async (method) => {
      const response = await t.app.request('/api/v2/sales-orders', {
        method,
        headers: { authorization: basicAuth(ACME) },
      });
      await problem(response, 405);
      expect(response.headers.get('allow')).toBe('POST');
    },
  );

  it('answers /healthz and /readyz', async () => {
    expect((await t.app.request('/healthz')).status).toBe(200);
    const ready = await t.admin.request('/readyz');
    expect(ready.status).toBe(200);
    // The node the publisher is on (host:port, nothing more of the broker URL).
    expect(await answer(ready)).toEqual({
      status: 'ready',
      broker: { node: nodeAddress(AMQP_URL) },
    });
  });
});

describe('secrets', () => {
  it('never writes an API key or an Authorization header into the log', async () => {
    await t.post('sales-orders', orders, {
      auth: basicAuth({ businessId: 'ACME', apiKey: 'wrong-key-secret-XYZ' }),
    });
    await t.post('sales-orders', orders);
    await t.topology.messages();
    const all = t.logs.raw.join('');
    expect(t.logs.raw.length).toBeGreaterThan(5);
    for (const secret of [
      ACME.apiKey,
      OTHER.apiKey,
      'wrong-key-secret-XYZ',
      basicAuth(ACME).slice(6),
    ])
      expect(all).not.toContain(secret);
  });
});
