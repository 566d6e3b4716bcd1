/**
 * Redis away: an `Idempotency-Key` request is refused with 503 + Retry-After (never run
 * unprotected, never a 500), requests without the header go on with per-instance limits, and all
 * is shared again once Redis is back. At start-up, an unreachable Redis is the same outage: the
 * service starts (test/faults/start-without-redis.test.ts runs `serve` through it).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/main.js';
import { answer, createTestApp, LogCapture, type TestApp } from '../support/http-app.js';
import { REDIS_URL, removeKeys, testRedisState, uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { validRecords } from '../records/fixtures.js';

const open: Array<TestApp | TcpProxy | { close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

const orders = validRecords('sales-orders');

describe('the shared state on Redis, when Redis is away', () => {
  it('answers 503 idempotency-unavailable with Retry-After to a keyed request, serves the others, and recovers', async () => {
    const redisPort = Number(new URL(REDIS_URL).port || 6379);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: redisPort });
    open.push(proxy);
    const keyPrefix = uniquePrefix();
    open.push({ close: () => removeKeys(keyPrefix) });
    const state = await testRedisState({ url: proxy.urlFor(REDIS_URL), keyPrefix });
    const t = await createTestApp({ sharedState: state });
    open.push(t);
    const keyed = (k: string) =>
      t.post('sales-orders', orders, { headers: { 'idempotency-key': k } });
    expect((await keyed('outage-1')).status).toBe(202);

    proxy.cut({ refuse: true });
    const refused = await keyed('outage-2');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await answer(refused)).toMatchObject({ type: '/problems/idempotency-unavailable' });
    // Logged for what it is, not as the broker's outage (issue 38, item 21).
    expect(t.logs.lines.filter((l) => l.status === 503).map((l) => l.msg)).toEqual([
      'request not accepted: shared state unavailable (Redis did not answer)',
    ]);
    // Without the header: accepted, rate limit kept by this instance meanwhile.
    const plain = await t.post('sales-orders', orders);
    expect(plain.status).toBe(202);
    expect(plain.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(await t.topology.count()).toBe(orders.length * 2);

    proxy.restore();
    await expect
      .poll(async () => (await keyed('outage-2')).status, { timeout: 15_000, interval: 200 })
      .toBe(202);
    const replay = await keyed('outage-1');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('reports whether Redis answers on /metrics, and counts the requests refused for it from 0', async () => {
    const redisPort = Number(new URL(REDIS_URL).port || 6379);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: redisPort });
    open.push(proxy);
    const keyPrefix = uniquePrefix();
    open.push({ close: () => removeKeys(keyPrefix) });
    const state = await testRedisState({ url: proxy.urlFor(REDIS_URL), keyPrefix });
    const t = await createTestApp({ sharedState: state });
    open.push(t);
    const metric = async (series: string) => {
      const text = await (await t.admin.request('/metrics')).text();
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    const reachable = 'warehouse_ingest_shared_state_reachable{backend="redis"}';
    const refused = 'warehouse_ingest_shared_state_refused_total{backend="redis"}';
    expect(await metric(reachable)).toBe(1);
    expect(await metric(refused)).toBe(0);

    proxy.cut({ refuse: true });
    await expect.poll(() => metric(reachable), { timeout: 5_000, interval: 50 }).toBe(0);
    const keyed = (k: string) =>
      t.post('sales-orders', orders, { headers: { 'idempotency-key': k } });
    expect((await keyed('metrics-1')).status).toBe(503);
    expect((await keyed('metrics-2')).status).toBe(503);
    expect((await t.post('sales-orders', orders)).status).toBe(202); // not refused: no key
    expect(await metric(refused)).toBe(2);

    proxy.restore();
    await expect.poll(() => metric(reachable), { timeout: 15_000, interval: 100 }).toBe(1);
    expect(await metric(refused)).toBe(2);
  });

  it('starts when Redis cannot be reached, not ready until it is, naming where (never its password) in one warning', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const logs = new LogCapture();
    const service = await startService({
      env: {
        REDIS_URL: `redis://:secret-pass@127.0.0.1:${port}/0`,
        PORT: '0',
        ADMIN_PORT: '0',
        INGEST_ENV: 'sandbox',
      },
      log: createLogger({ level: 'info', destination: logs }),
    });
    open.push({ close: () => service.stop() });
    const ready = await fetch(`${service.adminUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      detail:
        'Not ready: shared state: not reached since start-up (the reasons are in the service log)',
    });
    const shared = logs.lines.filter((l) => String(l.msg).includes('shared state'));
    expect(shared.map((l) => [l.level, l.msg])).toContainEqual([
      'warn',
      'cannot reach the shared state at start-up: /readyz answers 503 and Idempotency-Key requests 503 until it is reached; retrying',
    ]);
    expect(shared.filter((l) => l.level === 'warn' || l.level === 'error')).toHaveLength(1);
    expect(shared[0]).toMatchObject({ sharedState: `redis://127.0.0.1:${port}/0` });
    expect(logs.raw.join('')).not.toContain('secret-pass');
  });
});
