/**
 * Per-business rate limit and bulkhead over the real app and broker: one business's storm or
 * slow batch is refused with 429 (problem details, Retry-After, IETF RateLimit fields) while
 * the other business keeps being served.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AMQP_URL } from '../support/broker.js';
import {
  ACME,
  OTHER,
  answer,
  basicAuth,
  createTestApp,
  type TestApp,
} from '../support/http-app.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { validRecords } from '../records/fixtures.js';

const open: Array<TestApp | TcpProxy> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const item of open.splice(0).reverse()) await item.close();
});

const orders = validRecords('sales-orders');
const forOther = () =>
  orders.map((o) => ({ ...o, identifiers: { ...(o.identifiers as object), businessId: 'OTHER' } }));

describe('rate limit per business (token bucket)', () => {
  it('lets a business burst its quota, then answers 429 with Retry-After and RateLimit fields; other businesses are unaffected', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t = await createTestApp({
      yaml: 'http:\n  abuse:\n    rateLimit: { requests: 3, windowSeconds: 60 }',
    });
    open.push(t);

    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await t.post('sales-orders', orders);
      expect(response.status).toBe(202);
      expect(response.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
      remaining.push(response.headers.get('ratelimit')!);
    }
    expect(remaining).toEqual(['"default";r=2;t=20', '"default";r=1;t=40', '"default";r=0;t=60']);

    const refused = await t.post('sales-orders', orders);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.headers.get('retry-after')).toBe('20'); // one token per 20 s
    expect(refused.headers.get('ratelimit')).toBe('"default";r=0;t=60');
    expect(await answer(refused)).toMatchObject({
      status: 429,
      type: '/problems/too-many-requests',
      detail: expect.stringContaining('rate limit'),
    });
    expect(await t.topology.count()).toBe(orders.length * 3);

    // The other business has its own bucket.
    expect((await t.post('sales-orders', forOther(), { auth: basicAuth(OTHER) })).status).toBe(202);

    vi.setSystemTime(Date.now() + 20_000);
    const again = await t.post('sales-orders', orders);
    expect(again.status).toBe(202);
    expect(again.headers.get('ratelimit')).toBe('"default";r=0;t=60');
  });

  it('counts v1 and v2 requests of a business together, and refused logins not at all', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t = await createTestApp({
      yaml: 'http:\n  abuse:\n    rateLimit: { requests: 2, windowSeconds: 10 }',
    });
    open.push(t);
    expect(
      (await t.post('sales-orders', [], { auth: basicAuth({ ...ACME, apiKey: 'wrong-key' }) }))
        .status,
    ).toBe(401);
    expect((await t.post('/api/v1/sales-orders', { oOrders: [] })).status).toBe(400);
    expect((await t.post('sales-orders', [])).status).toBe(400);
    expect((await t.post('/api/v1/sales-orders', { oOrders: [] })).status).toBe(429);
  });
});

describe('bulkhead: batches in flight per business', () => {
  it('refuses a second batch of a business while its first is still being published; another business is admitted', async () => {
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(AMQP_URL).port || 5672),
    });
    open.push(proxy);
    const t = await createTestApp({
      amqpUrl: proxy.urlFor(AMQP_URL),
      yaml: 'http:\n  abuse:\n    maxInFlightBatches: 1',
    });
    open.push(t);
    expect((await t.post('sales-orders', orders)).status).toBe(202); // connected, key verified

    proxy.hold(); // no confirms come back: the next batch stays in flight
    const inFlight = () => t.logs.lines.filter((l) => l.msg === 'batch in flight').length;
    const before = inFlight();
    const first = t.post('sales-orders', orders);
    await vi.waitFor(() => expect(inFlight()).toBe(before + 1));

    const second = await t.post('sales-orders', orders);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(second.headers.get('ratelimit-policy')).toBe(
      '"concurrency";q=1;qu="concurrent-requests"',
    );
    expect(await answer(second)).toMatchObject({
      type: '/problems/too-many-requests',
      detail: expect.stringContaining('at most 1 at once'),
    });

    const other = t.post('sales-orders', forOther(), { auth: basicAuth(OTHER) });
    // admitted (after a first scrypt check of its key), waiting on the same broker
    await vi.waitFor(() => expect(inFlight()).toBe(before + 2), { timeout: 10_000 });

    proxy.release();
    expect((await first).status).toBe(202);
    expect((await other).status).toBe(202);
    expect((await t.post('sales-orders', orders)).status).toBe(202); // the slot was given back
    await expect.poll(() => t.topology.count()).toBe(orders.length * 4);
  });
});
