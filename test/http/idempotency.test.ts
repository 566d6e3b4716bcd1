/** Idempotency-Key on the batch endpoints, over the real app and broker. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AMQP_URL } from '../support/broker.js';
import { OTHER, answer, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { validRecords } from '../records/fixtures.js';
import { createIdempotencyStore } from '../../src/http/idempotency.js';

const open: Array<TestApp | TcpProxy> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const item of open.splice(0).reverse()) await item.close();
});

const orders = validRecords('sales-orders');
const key = (k: string) => ({ headers: { 'idempotency-key': k } });

describe('Idempotency-Key', () => {
  it('a retry with the same key and body gets the stored 202 (same status and body), marked as a replay, and publishes nothing more', async () => {
    const t = await createTestApp();
    open.push(t);
    const first = await t.post('sales-orders', orders, key('"order-batch-1"'));
    expect(first.status).toBe(202);
    const body = await first.text();
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const retry = await t.post('sales-orders', orders, key('"order-batch-1"'));
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.text()).toBe(body);
    expect(await t.topology.count()).toBe(orders.length);
  });

  it("a replay's x-correlation-id is the correlationId its body names (the first request's), with a reason phrase", async () => {
    const t = await createTestApp();
    open.push(t);
    const first = await t.post('sales-orders', orders.slice(0, 1), {
      headers: { 'idempotency-key': 'corr-1', 'x-correlation-id': 'first-try' },
    });
    expect(first.status).toBe(202);
    expect(await answer(first)).toMatchObject({ correlationId: 'first-try' });
    const retry = await t.post('sales-orders', orders.slice(0, 1), {
      headers: { 'idempotency-key': 'corr-1', 'x-correlation-id': 'second-try' },
    });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.statusText).toBe('Accepted');
    const replayed = (await answer(retry)) as { correlationId: string };
    expect(retry.headers.get('x-correlation-id')).toBe(replayed.correlationId);
    expect(replayed.correlationId).toBe('first-try');
    // This request's own id stays in the log, next to the id it replays.
    expect(
      t.logs.lines.find((l) => l.correlationId === 'second-try' && l.replayOf === 'first-try'),
    ).toBeDefined();
  });

  it('stores a validation 400 and replays it; the same key with another body is 422; keys are per business', async () => {
    const t = await createTestApp();
    open.push(t);
    const invalid = [{ ...orders[0], identifiers: 'nope' }];
    const first = await t.post('sales-orders', invalid, key('k-400'));
    expect(first.status).toBe(400);
    const retry = await t.post('sales-orders', invalid, key('k-400'));
    expect(retry.status).toBe(400);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('content-type')).toBe('application/problem+json');
    expect(await retry.text()).toBe(await first.text());

    const other = await t.post('sales-orders', orders, key('k-400'));
    expect(other.status).toBe(422);
    expect(await answer(other)).toMatchObject({ type: '/problems/idempotency-key-reused' });
    // Same key on another endpoint is another request too.
    expect((await t.post('/api/v1/sales-orders', { oOrders: [] }, key('k-400'))).status).toBe(422);

    // Another business's identical key is its own.
    const forOther = orders.map((o) => ({
      ...o,
      identifiers: { ...(o.identifiers as object), businessId: 'OTHER' },
    }));
    expect(
      (await t.post('sales-orders', forOther, { auth: basicAuth(OTHER), ...key('k-400') })).status,
    ).toBe(202);
    expect(await t.topology.count()).toBe(orders.length);
  });

  it('answers 409 while the first request with the key is in flight, and does not store a 503: the retry runs again and succeeds', async () => {
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(AMQP_URL).port || 5672),
    });
    open.push(proxy);
    const t = await createTestApp({ amqpUrl: proxy.urlFor(AMQP_URL) });
    open.push(t);
    expect((await t.post('sales-orders', [])).status).toBe(400); // connected, key verified

    proxy.hold();
    const inFlight = () => t.logs.lines.filter((l) => l.msg === 'batch in flight').length;
    const first = t.post('sales-orders', orders, key('k-503'));
    await vi.waitFor(() => expect(inFlight()).toBe(1));
    const concurrent = await t.post('sales-orders', orders, key('k-503'));
    expect(concurrent.status).toBe(409);
    expect(await answer(concurrent)).toMatchObject({ type: '/problems/idempotency-key-in-use' });

    proxy.cut(); // the connection is lost before any confirm: 503
    expect((await first).status).toBe(503);
    proxy.release();
    await vi.waitFor(async () => expect((await t.admin.request('/readyz')).status).toBe(200), {
      timeout: 15_000,
      interval: 100,
    });
    await t.topology.messages(); // whatever the broker took before the failure
    const retry = await t.post('sales-orders', orders, key('k-503'));
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses a malformed key with 400 before reading the body', async () => {
    const t = await createTestApp();
    open.push(t);
    for (const bad of ['', '"unterminated', 'has space', 'x'.repeat(256), '"tab\there"']) {
      const response = await t.post('sales-orders', orders, key(bad));
      expect(response.status, bad).toBe(400);
      expect(await answer(response)).toMatchObject({ type: '/problems/invalid-idempotency-key' });
    }
    expect(await t.topology.count()).toBe(0);
  });
});

describe('the idempotency store', () => {
  const answer202 = {
    status: 202,
    correlationId: 'first',
    contentType: 'application/json',
    body: '{"success":true}',
  };

  it('forgets a key after ttlSeconds', async () => {
    let now = 0;
    const store = createIdempotencyStore({
      ttlSeconds: 60,
      maxEntries: 10,
      maxBytes: 10_000,
      now: () => now,
    });
    const claim = await store.claim('ACME', 'k', 'f1');
    claim.replay ?? claim.settle(answer202);
    now = 59_999;
    expect((await store.claim('ACME', 'k', 'f1')).replay).toEqual(answer202);
    now = 60_000;
    expect((await store.claim('ACME', 'k', 'f2')).replay).toBeUndefined(); // a new request, even with another body
  });

  it('keeps at most maxEntries keys and maxBytes of answers, least recently used forgotten first', async () => {
    const store = createIdempotencyStore({ ttlSeconds: 3600, maxEntries: 3, maxBytes: 1_000_000 });
    for (const k of ['a', 'b', 'c']) {
      const claim = await store.claim('ACME', k, 'f');
      claim.replay ?? claim.settle(answer202);
    }
    expect((await store.claim('ACME', 'a', 'f')).replay).toBeDefined(); // a is now the most recent
    const d = await store.claim('ACME', 'd', 'f');
    d.replay ?? d.settle(answer202);
    expect(store.size).toBe(3);
    expect((await store.claim('ACME', 'b', 'f')).replay).toBeUndefined(); // b was the least recent

    const small = createIdempotencyStore({ ttlSeconds: 3600, maxEntries: 100, maxBytes: 200 });
    for (let i = 0; i < 10; i++) {
      const claim = await small.claim('ACME', `k${i}`, 'f');
      claim.replay ?? claim.settle({ ...answer202, body: 'x'.repeat(80) });
    }
    expect(small.size).toBeLessThanOrEqual(2);
  });
});
