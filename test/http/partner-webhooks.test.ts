/**
 * The partner API's actions on the outbound half, through the real app, a real events worker on
 * the real broker, real receivers checking every signature with the `standardwebhooks` package,
 * and the history on a PostgreSQL database of this file's own: a business lists its endpoints,
 * sends one a test event, and has an event sent again — never another business's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { openedOnce } from '../../src/history/opened.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createHistoryWriter, type HistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { AMQP_URL } from '../support/broker.js';
import {
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { ACME, OTHER, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const ACME_SECRET = testSecret(41);
const OTHER_SECRET = testSecret(42);
const events = testEventsConfig({ retrySchedule: [0, 50] });

let database: Awaited<ReturnType<typeof freshDatabase>>;
let store: HistoryStore;
let writer: HistoryWriter;
let harness: EventsHarness;
let app: TestApp;
let acme: WebhookReceiver;
let other: WebhookReceiver;

const as = (credentials: typeof ACME | typeof OTHER) => ({
  get: (path: string) =>
    app.app.request(path, { headers: { authorization: basicAuth(credentials) } }),
  post: (path: string) =>
    app.app.request(path, { method: 'POST', headers: { authorization: basicAuth(credentials) } }),
});

interface Hook {
  id: string;
  name: string;
  url: string;
  events: string[];
  state: string;
  delivered?: number;
  lastAttempts?: Array<{ eventId: string; end: string; status?: number }>;
}

async function hooksOf(credentials: typeof ACME | typeof OTHER): Promise<Hook[]> {
  const response = await as(credentials).get('/api/v2/webhooks');
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: Hook[] }).items;
}

beforeAll(async () => {
  database = await freshDatabase('partnerhooks');
  store = openedOnce(createPostgresHistory({ url: database.url }));
  writer = createHistoryWriter({
    store,
    log: createLogger({ level: 'silent' }),
    metrics: { deferred: () => undefined, dropped: () => undefined },
    maxPendingRows: 100_000,
    flushMs: 10,
  });
  acme = await startWebhookReceiver([ACME_SECRET]);
  other = await startWebhookReceiver([OTHER_SECRET]);
  harness = await startEventsHarness({
    events,
    env: { ACME_SECRET, OTHER_SECRET },
    tenants: [
      {
        businessId: 'ACME',
        webhooks: [webhook(acme.url, 'ACME_SECRET', { id: 'erp', events: ['sales-order.*'] })],
      },
      { businessId: 'OTHER', webhooks: [webhook(other.url, 'OTHER_SECRET', { id: 'erp' })] },
    ],
    history: { writer, endpointStates: () => store.endpointStates({ operator: true }) },
  });
  app = await createTestApp({ history: { writer, store }, events: harness.consumer.actions });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await harness?.close();
  await Promise.all([acme?.close(), other?.close()]);
  await writer?.close();
  await store?.close();
  await database?.drop();
});

describe('GET /api/v2/webhooks', () => {
  it("lists the business's own endpoints with their filters and state, never a secret", async () => {
    const response = await as(ACME).get('/api/v2/webhooks');
    const text = await response.text();
    expect(text).not.toContain('whsec_');
    expect(text).not.toContain(ACME_SECRET.slice(6, 20));
    const [hook, ...more] = (JSON.parse(text) as { items: Hook[] }).items;
    expect(more).toEqual([]);
    expect(hook).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      name: 'erp',
      url: acme.url,
      events: ['sales-order.*'],
      state: 'enabled',
    });
    const [theirs] = await hooksOf(OTHER);
    expect(theirs!.url).toBe(other.url);
    // The same configured id in two businesses is two endpoints.
    expect(theirs!.id).not.toBe(hook!.id);
  });
});

describe('POST /api/v2/webhooks/{id}/test', () => {
  it('sends a signed webhook.test event now and answers with the attempt, kept in the history', async () => {
    const [hook] = await hooksOf(ACME);
    const response = await as(ACME).post(`/api/v2/webhooks/${hook!.id}/test`);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { eventId: string; attempt: Record<string, unknown> };
    expect(answer.attempt).toMatchObject({ endpoint: 'erp', end: 'delivered', status: 200 });
    expect(acme.received).toHaveLength(1);
    const [test] = acme.received;
    expect(test!.id).toBe(answer.eventId);
    expect(test!.verifiedWith).toEqual([ACME_SECRET]);
    expect(test!.body).toMatchObject({
      type: 'webhook.test',
      businessId: 'ACME',
      data: { endpoint: 'erp' },
    });

    await writer.flush();
    const page = (await (await as(ACME).get('/api/v2/events?type=webhook.test')).json()) as {
      items: Array<{ id: string; attempts: Array<{ end: string }> }>;
    };
    expect(page.items.map((e) => [e.id, e.attempts.map((a) => a.end)])).toEqual([
      [answer.eventId, ['delivered']],
    ]);
    const [after] = await hooksOf(ACME);
    expect(after).toMatchObject({ delivered: 1 });
    expect(after!.lastAttempts![0]).toMatchObject({ eventId: answer.eventId, status: 200 });
    // The other business sees none of it.
    const theirs = (await (await as(OTHER).get('/api/v2/events?type=webhook.test')).json()) as {
      items: unknown[];
    };
    expect(theirs.items).toEqual([]);
  });

  it("answers another business's endpoint id exactly as an unknown one: 404", async () => {
    const [theirs] = await hooksOf(OTHER);
    const before = other.received.length;
    const response = await as(ACME).post(`/api/v2/webhooks/${theirs!.id}/test`);
    expect(response.status).toBe(404);
    expect((await as(ACME).post('/api/v2/webhooks/0000000000000000/test')).status).toBe(404);
    expect(other.received.length).toBe(before);
    expect((await as(ACME).get(`/api/v2/webhooks/${theirs!.id}/test`)).status).toBe(405);
  });
});

describe('POST /api/v2/events/{id}/resend', () => {
  it("sends a delivered event again under its original webhook-id, signed with the endpoint's secret", async () => {
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'ACME',
      type: 'sales-order.shipped',
      data: { orderNumber: 'SO-RESEND-1' },
    });
    await expect.poll(() => acme.received.filter((r) => r.id === id).length).toBe(1);
    await writer.flush();

    const response = await as(ACME).post(`/api/v2/events/${encodeURIComponent(id)}/resend`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ eventId: id, endpoints: ['erp'] });
    await expect.poll(() => acme.received.filter((r) => r.id === id).length).toBe(2);
    const [first, again] = acme.received.filter((r) => r.id === id);
    expect(again!.verifiedWith).toEqual([ACME_SECRET]);
    expect(again!.body).toEqual(first!.body);

    // Another business's event id answers as an unknown one, and nothing is sent.
    expect((await as(OTHER).post(`/api/v2/events/${encodeURIComponent(id)}/resend`)).status).toBe(
      404,
    );
    expect((await as(ACME).post('/api/v2/events/evt-unknown/resend')).status).toBe(404);
    expect(other.received.filter((r) => r.id === id)).toEqual([]);
  });

  it('refuses an event none of the endpoints takes (409), unless one endpoint is named', async () => {
    // An event the warehouse sent that ACME's filter (sales-order.*) does not take.
    await store.write({
      events: [
        {
          id: 'evt-po-unsubscribed',
          type: 'purchase-order.received',
          businessId: 'ACME',
          payload: { orderNumber: 'PO-1' },
          receivedAt: new Date(),
        },
      ],
    });
    const refused = await as(ACME).post('/api/v2/events/evt-po-unsubscribed/resend');
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { type: string }).type).toBe('/problems/no-subscriber');
    const [hook] = await hooksOf(ACME);
    const named = await as(ACME).post(
      `/api/v2/events/evt-po-unsubscribed/resend?endpoint=${hook!.id}`,
    );
    expect(named.status).toBe(202);
    await expect
      .poll(() => acme.received.filter((r) => r.id === 'evt-po-unsubscribed').length)
      .toBe(1);
    const bad = await as(ACME).post('/api/v2/events/evt-po-unsubscribed/resend?colour=blue');
    expect(bad.status).toBe(400);
  });
});

describe('without an events worker', () => {
  it('answers 404: the service delivers no events', async () => {
    const plain = await createTestApp();
    try {
      const response = await plain.app.request('/api/v2/webhooks', {
        headers: { authorization: basicAuth(ACME) },
      });
      expect(response.status).toBe(404);
      expect(((await response.json()) as { detail: string }).detail).toContain('no broker');
    } finally {
      await plain.close();
    }
  });
});
