/**
 * The partner API's batch reads, through the real app over the real broker, with the history on
 * a PostgreSQL database of this file's own: a business finds its own batches again — what a
 * `202` or a `400` said — page by page and filtered, and never another business's.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openedOnce } from '../../src/history/opened.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createHistoryWriter, type HistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { ACME, OTHER, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';

const TEMPLATE = (
  JSON.parse(
    readFileSync(new URL('../../fixtures/sales-orders/valid.json', import.meta.url), 'utf8'),
  ) as Array<Record<string, unknown>>
)[0]!;

function order(shipmentId: string, businessId: string): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(TEMPLATE)
      .replaceAll('SO-2026-000187', shipmentId)
      .replaceAll('"ACME"', JSON.stringify(businessId)),
  ) as Record<string, unknown>;
}

let database: Awaited<ReturnType<typeof freshDatabase>>;
let store: HistoryStore;
let writer: HistoryWriter;
let app: TestApp;
/** ACME's batches as sent, oldest first: correlation ids and what each answer said. */
const sent: Array<{ correlationId: string; status: number; messageIds: string[] }> = [];
let otherCorrelationId: string;

const get = (path: string, credentials: { businessId: string; apiKey: string } | null = ACME) =>
  app.app.request(path, {
    headers: credentials ? { authorization: basicAuth(credentials) } : {},
  });

interface Page {
  items: Array<Record<string, unknown> & { correlationId: string; outcome: string }>;
  next?: string;
}

beforeAll(async () => {
  database = await freshDatabase('partner');
  store = openedOnce(createPostgresHistory({ url: database.url }));
  writer = createHistoryWriter({
    store,
    log: createLogger({ level: 'silent' }),
    metrics: { deferred: () => undefined, dropped: () => undefined },
    maxPendingRows: 100_000,
    flushMs: 10,
  });
  app = await createTestApp({ history: { writer, store } });
  for (let i = 0; i < 5; i++) {
    const body = i === 2 ? [{ identifiers: {} }] : [order(`SO-PARTNER-${i}`, 'ACME')];
    const response = await app.post('sales-orders', body);
    const answer = (await response.json()) as { messageIds?: string[] };
    sent.push({
      correlationId: response.headers.get('x-correlation-id')!,
      status: response.status,
      messageIds: answer.messageIds ?? [],
    });
  }
  const theirs = await app.post('sales-orders', [order('SO-PARTNER-OTHER', 'OTHER')], {
    auth: basicAuth(OTHER),
  });
  expect(theirs.status).toBe(202);
  otherCorrelationId = theirs.headers.get('x-correlation-id')!;
  await writer.flush();
}, 60_000);

afterAll(async () => {
  await app?.close();
  await writer?.close();
  await store?.close();
  await database?.drop();
});

describe('GET /api/v2/batches', () => {
  it("lists the business's own batches, newest first, and no one else's", async () => {
    expect(sent.map((s) => s.status)).toEqual([202, 202, 400, 202, 202]);
    const response = await get('/api/v2/batches');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const page = (await response.json()) as Page;
    expect(page.items.map((b) => b.correlationId)).toEqual(
      sent.map((s) => s.correlationId).reverse(),
    );
    expect(page.next).toBeUndefined();
    expect(page.items[0]).toEqual({
      correlationId: sent[4]!.correlationId,
      receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      source: { endpoint: '/api/v2/sales-orders' },
      kind: 'sales-orders',
      outcome: 'accepted',
      recordCount: 1,
    });
    const theirs = (await (await get('/api/v2/batches', OTHER)).json()) as Page;
    expect(theirs.items.map((b) => b.correlationId)).toEqual([otherCorrelationId]);
  });

  it('pages with an opaque cursor until the last page, which has none', async () => {
    const seen: string[] = [];
    let path = '/api/v2/batches?limit=2';
    for (let pages = 0; pages < 5; pages++) {
      const page = (await (await get(path)).json()) as Page;
      seen.push(...page.items.map((b) => b.correlationId));
      if (!page.next) break;
      path = `/api/v2/batches?limit=2&cursor=${encodeURIComponent(page.next)}`;
    }
    expect(seen).toEqual(sent.map((s) => s.correlationId).reverse());
  });

  it('narrows by outcome, kind, source and time; a refusal carries the problem it answered', async () => {
    const rejected = (await (await get('/api/v2/batches?outcome=rejected')).json()) as Page;
    expect(rejected.items).toHaveLength(1);
    expect(rejected.items[0]).toMatchObject({
      correlationId: sent[2]!.correlationId,
      recordCount: 0,
      problem: { status: 400, type: '/problems/validation-failed' },
    });
    const none = (await (await get('/api/v2/batches?kind=work-orders')).json()) as Page;
    expect(none.items).toEqual([]);
    const bySource = (await (
      await get(`/api/v2/batches?source=${encodeURIComponent('/api/v2/sales-orders')}`)
    ).json()) as Page;
    expect(bySource.items).toHaveLength(5);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const later = (await (
      await get(`/api/v2/batches?since=${encodeURIComponent(future)}`)
    ).json()) as Page;
    expect(later.items).toEqual([]);
    const before = (await (
      await get(`/api/v2/batches?until=${encodeURIComponent(future)}&limit=1`)
    ).json()) as Page;
    expect(before.items.map((b) => b.correlationId)).toEqual([sent[4]!.correlationId]);
  });

  it('answers a parameter it does not take with invalid-query problem details naming each', async () => {
    const response = await get('/api/v2/batches?outcome=lost&limit=0&since=yesterday&colour=blue');
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as { type: string; errors: Array<{ path: string }> };
    expect(problem.type).toBe('/problems/invalid-query');
    expect(problem.errors.map((e) => e.path).sort()).toEqual(
      ['colour', 'limit', 'outcome', 'since'].sort(),
    );
    const cursor = await get('/api/v2/batches?cursor=not-a-cursor');
    expect(cursor.status).toBe(400);
    expect(((await cursor.json()) as { errors: unknown[] }).errors).toEqual([
      { path: 'cursor', message: 'Unknown cursor' },
    ]);
  });

  it('needs credentials, and takes GET only', async () => {
    expect((await get('/api/v2/batches', null)).status).toBe(401);
    const post = await app.app.request('/api/v2/batches', {
      method: 'POST',
      headers: { authorization: basicAuth(ACME) },
    });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });
});

describe('GET /api/v2/batches/{correlationId}', () => {
  it('gives an accepted batch with the message ids its 202 answered', async () => {
    const response = await get(`/api/v2/batches/${sent[0]!.correlationId}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      correlationId: sent[0]!.correlationId,
      outcome: 'accepted',
      recordCount: 1,
      messageIds: sent[0]!.messageIds,
    });
  });

  it("answers another business's batch exactly as an unknown one: 404", async () => {
    const theirs = await get(`/api/v2/batches/${otherCorrelationId}`);
    const unknown = await get('/api/v2/batches/00000000-0000-4000-8000-000000000000');
    expect(theirs.status).toBe(404);
    expect(unknown.status).toBe(404);
    const body = (r: Response) => r.json() as Promise<{ type: string }>;
    expect((await body(theirs)).type).toBe((await body(unknown)).type);
    expect((await get(`/api/v2/batches/${otherCorrelationId}`, OTHER)).status).toBe(200);
  });
});

describe('the partner API without a readable history', () => {
  it('answers 404 when the service keeps no history', async () => {
    const plain = await createTestApp();
    try {
      const response = await plain.app.request('/api/v2/batches', {
        headers: { authorization: basicAuth(ACME) },
      });
      expect(response.status).toBe(404);
      expect(((await response.json()) as { detail: string }).detail).toContain('keeps no history');
    } finally {
      await plain.close();
    }
  });

  it('answers 503 with Retry-After while the history cannot be reached, and still takes batches', async () => {
    const away = openedOnce(
      createPostgresHistory({ url: 'postgres://postgres@127.0.0.1:1/nowhere' }),
    );
    const awayWriter = createHistoryWriter({
      store: away,
      log: createLogger({ level: 'silent' }),
      metrics: { deferred: () => undefined, dropped: () => undefined },
      maxPendingRows: 1000,
      flushMs: 10,
    });
    const cut = await createTestApp({ history: { writer: awayWriter, store: away } });
    try {
      const response = await cut.app.request('/api/v2/batches', {
        headers: { authorization: basicAuth(ACME) },
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
      expect(((await response.json()) as { type: string }).type).toBe(
        '/problems/history-unavailable',
      );
      expect((await cut.post('sales-orders', [order('SO-PARTNER-AWAY', 'ACME')])).status).toBe(202);
    } finally {
      await cut.close();
      await awayWriter.close();
      await away.close();
    }
  });
});
