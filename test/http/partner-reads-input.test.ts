/**
 * The partner API's reads given input no store can take (issue 38, item 16): a NUL character in a
 * query or path parameter, a cursor or a time out of the stores' range. Each answers 400 with
 * invalid-query problem details naming the parameter, never a 500, on the real PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openedOnce } from '../../src/history/opened.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createHistoryWriter, type HistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { ACME, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';

let database: Awaited<ReturnType<typeof freshDatabase>>;
let store: HistoryStore;
let writer: HistoryWriter;
let app: TestApp;

beforeAll(async () => {
  database = await freshDatabase('partner_input');
  store = openedOnce(createPostgresHistory({ url: database.url }));
  writer = createHistoryWriter({
    store,
    log: createLogger({ level: 'silent' }),
    metrics: { deferred: () => undefined, dropped: () => undefined },
    maxPendingRows: 10_000,
    flushMs: 10,
  });
  app = await createTestApp({ history: { writer, store } });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await writer?.close();
  await store?.close();
  await database?.drop();
});

const get = (path: string) =>
  app.app.request(path, { headers: { authorization: basicAuth(ACME) } });

const cursor = (ms: number | string) => Buffer.from(`${ms}.${randomUUID()}`).toString('base64url');

describe('partner reads given input no store can take', () => {
  it.each([
    ['/api/v2/batches?outcome=accepted&source=%00', 'source'],
    ['/api/v2/batches?kind=sales%00orders', 'kind'],
    ['/api/v2/events?type=order.%00shipped', 'type'],
    ['/api/v2/batches/abc%00def', 'correlationId'],
    ['/api/v2/records/sales-orders/SO-%001', 'key'],
    [`/api/v2/batches?cursor=${cursor(8_640_000_000_000_000)}`, 'cursor'],
    [`/api/v2/events?cursor=${cursor(253_402_300_800_000)}`, 'cursor'],
    ['/api/v2/batches?since=0000-01-01T00:00:00Z', 'since'],
    ['/api/v2/events?until=9999-12-31T23:59:59-23:59', 'until'],
  ])('%s answers 400 naming %s', async (path, name) => {
    const response = await get(path);
    expect(response.status, await response.clone().text()).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as { type: string; errors: Array<{ path: string }> };
    expect(problem.type).toBe('/problems/invalid-query');
    expect(problem.errors.map((e) => e.path)).toEqual([name]);
  });

  it('still answers a cursor and times within range', async () => {
    expect((await get(`/api/v2/batches?cursor=${cursor(Date.now())}`)).status).toBe(200);
    expect((await get('/api/v2/events?since=0001-01-01T00:00:00Z')).status).toBe(200);
    expect((await get('/api/v2/batches?until=9999-12-31T23:59:59Z')).status).toBe(200);
  });
});
