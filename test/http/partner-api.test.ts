/**
 * The partner API's reads, through the real app over the real broker, with the history on a
 * PostgreSQL database of this file's own: a business finds its own batches again — what a `202`
 * or a `400` said — page by page and filtered, and its records with the warehouse's events about
 * them; never another business's.
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

describe('GET /api/v2/records/{kind}/{key}', () => {
  it('gives the batch that carried a record, its message id, and its state from the events about it', async () => {
    const path = '/api/v2/records/sales-orders/SO-PARTNER-0';
    const before = await get(path);
    expect(before.status).toBe(200);
    expect(await before.json()).toEqual({
      kind: 'sales-orders',
      key: 'SO-PARTNER-0',
      state: 'accepted',
      batches: [
        {
          correlationId: sent[0]!.correlationId,
          receivedAt: expect.any(String),
          source: { endpoint: '/api/v2/sales-orders' },
          messageId: sent[0]!.messageIds[0],
          index: 0,
        },
      ],
      events: [],
    });
    // What the events consumer writes when the warehouse answers the record.
    const shipped = {
      id: `evt-${sent[0]!.correlationId}`,
      type: 'sales-order.shipped',
      businessId: 'ACME',
      payload: { orderNumber: 'SO-PARTNER-0' },
      occurredAt: new Date('2026-11-26T08:00:00Z'),
      receivedAt: new Date('2026-11-26T08:00:01Z'),
      messageIds: [sent[0]!.messageIds[0]!],
    };
    await store.write({ events: [shipped] });
    const after = (await (await get(path)).json()) as { state: string; events: unknown[] };
    expect(after.state).toBe('sales-order.shipped');
    expect(after.events).toEqual([
      {
        id: shipped.id,
        type: 'sales-order.shipped',
        occurredAt: '2026-11-26T08:00:00.000Z',
        receivedAt: '2026-11-26T08:00:01.000Z',
      },
    ]);
  });

  it("answers another business's record, another kind and an unknown kind with 404", async () => {
    expect((await get('/api/v2/records/sales-orders/SO-PARTNER-0', OTHER)).status).toBe(404);
    expect((await get('/api/v2/records/sales-orders/SO-PARTNER-OTHER')).status).toBe(404);
    expect((await get('/api/v2/records/sales-orders/SO-PARTNER-OTHER', OTHER)).status).toBe(200);
    expect((await get('/api/v2/records/work-orders/SO-PARTNER-0')).status).toBe(404);
    expect((await get('/api/v2/records/invoices/SO-PARTNER-0')).status).toBe(404);
    // A refused batch's records are not in the history: only its batch is.
    expect((await get('/api/v2/records/sales-orders/SO-PARTNER-2')).status).toBe(404);
    // A malformed escape in the path is a malformed URL, never a 5xx.
    expect((await get('/api/v2/records/sales-orders/%E0%A4%A')).status).toBe(400);
  });
});

describe('GET /api/v2/events', () => {
  const day = (hour: number) => new Date(`2026-11-25T${String(hour).padStart(2, '0')}:00:00Z`);
  const window = `since=${encodeURIComponent(day(0).toISOString())}&until=${encodeURIComponent(day(23).toISOString())}`;
  interface EventPage {
    items: Array<{ id: string; type: string; attempts: Array<Record<string, unknown>> }>;
    next?: string;
  }
  const ids = ['evt-list-1', 'evt-list-2', 'evt-list-3'];

  beforeAll(async () => {
    // What the events consumer writes as the warehouse's events arrive and are delivered.
    await store.write({
      events: [
        ...ids.map((id, i) => ({
          id,
          type: i === 1 ? 'purchase-order.received' : 'sales-order.shipped',
          businessId: 'ACME',
          payload: { shipmentId: `SO-PARTNER-${i}` },
          receivedAt: day(8 + i),
          occurredAt: day(7 + i),
          correlationId: sent[i]!.correlationId,
        })),
        {
          id: 'evt-list-other',
          type: 'sales-order.shipped',
          businessId: 'OTHER',
          payload: { shipmentId: 'SO-PARTNER-OTHER' },
          receivedAt: day(9),
        },
      ],
      attempts: [
        {
          id: 'b7d1c2f0-1111-4e6a-9a53-000000000001',
          eventId: 'evt-list-1',
          businessId: 'ACME',
          endpoint: 'erp',
          at: new Date('2026-11-25T08:00:01Z'),
          end: 'failed',
          status: 503,
          durationMs: 40,
          responseExcerpt: 'busy',
        },
        {
          id: 'b7d1c2f0-1111-4e6a-9a53-000000000002',
          eventId: 'evt-list-1',
          businessId: 'ACME',
          endpoint: 'erp',
          at: new Date('2026-11-25T08:00:31Z'),
          end: 'delivered',
          status: 200,
          durationMs: 35,
        },
      ],
    });
  });

  it("lists the business's own events newest first, each with its delivery attempts", async () => {
    const response = await get(`/api/v2/events?${window}`);
    expect(response.status).toBe(200);
    const page = (await response.json()) as EventPage;
    expect(page.items.map((e) => e.id)).toEqual([...ids].reverse());
    expect(page.items.at(-1)).toEqual({
      id: 'evt-list-1',
      type: 'sales-order.shipped',
      occurredAt: '2026-11-25T07:00:00.000Z',
      receivedAt: '2026-11-25T08:00:00.000Z',
      correlationId: sent[0]!.correlationId,
      data: { shipmentId: 'SO-PARTNER-0' },
      attempts: [
        {
          at: '2026-11-25T08:00:01.000Z',
          endpoint: 'erp',
          end: 'failed',
          status: 503,
          durationMs: 40,
          responseExcerpt: 'busy',
        },
        {
          at: '2026-11-25T08:00:31.000Z',
          endpoint: 'erp',
          end: 'delivered',
          status: 200,
          durationMs: 35,
        },
      ],
    });
    const theirs = (await (await get(`/api/v2/events?${window}`, OTHER)).json()) as EventPage;
    expect(theirs.items.map((e) => e.id)).toEqual(['evt-list-other']);
  });

  it('narrows by type, pages with a cursor, and names a bad parameter', async () => {
    const shipped = (await (
      await get(`/api/v2/events?${window}&type=sales-order.shipped`)
    ).json()) as EventPage;
    expect(shipped.items.map((e) => e.id)).toEqual(['evt-list-3', 'evt-list-1']);
    const first = (await (await get(`/api/v2/events?${window}&limit=2`)).json()) as EventPage;
    expect(first.items.map((e) => e.id)).toEqual(['evt-list-3', 'evt-list-2']);
    const second = (await (
      await get(`/api/v2/events?${window}&limit=2&cursor=${encodeURIComponent(first.next!)}`)
    ).json()) as EventPage;
    expect(second.items.map((e) => e.id)).toEqual(['evt-list-1']);
    expect(second.next).toBeUndefined();

    const bad = await get('/api/v2/events?type=not%20a%20type&limit=101');
    expect(bad.status).toBe(400);
    expect(
      ((await bad.json()) as { errors: Array<{ path: string }> }).errors.map((e) => e.path).sort(),
    ).toEqual(['limit', 'type']);
    // A cursor made up from another business's event id is only a place in time: ours after it.
    const forged = Buffer.from(`${day(10).getTime()}.evt-list-other`).toString('base64url');
    const page = (await (
      await get(`/api/v2/events?${window}&cursor=${forged}`)
    ).json()) as EventPage;
    expect(page.items.map((e) => e.id)).toEqual(['evt-list-3', 'evt-list-2', 'evt-list-1']);
    const space = Buffer.from(`${day(10).getTime()}.evt list`).toString('base64url');
    expect((await get(`/api/v2/events?cursor=${space}`)).status).toBe(400);
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
