/**
 * Failed-login throttling over the real app: guessing from one address is cut off (429),
 * guessing one business's key from many addresses is slowed (capped), and the real business
 * keeps working throughout.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ACME,
  OTHER,
  answer,
  basicAuth,
  createTestApp,
  type TestApp,
} from '../support/http-app.js';
import { validRecords } from '../records/fixtures.js';

const open: TestApp[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const item of open.splice(0)) await item.close();
});

const orders = validRecords('sales-orders');
/** The same orders, for the second business (tenancy: every record carries its own id). */
const otherOrders = JSON.parse(JSON.stringify(orders).replaceAll('"ACME"', '"OTHER"')) as unknown[];
const from = (address: string, auth: string) => ({
  auth,
  headers: { 'x-forwarded-for': `203.0.113.9, ${address}` },
});
const wrong = basicAuth({ ...ACME, apiKey: 'guess-0000' });

describe('failed logins per client address', () => {
  it('refuses further unverified attempts for a business id from an address with 429 after maxFailuresPerClient, until the window passes; a neighbour behind the same address is not locked out', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t = await createTestApp({
      yaml: 'http:\n  trustProxyHops: 1\n  abuse:\n    authThrottle: { windowSeconds: 60, maxFailuresPerClient: 3, maxFailuresPerAddress: 50, failuresBeforeSlowdown: 100, slowdownStepMs: 0, maxSlowdownMs: 0 }',
    });
    open.push(t);
    // The real business, verified once from its own address.
    expect(
      (await t.post('sales-orders', orders, from('198.51.100.1', basicAuth(ACME)))).status,
    ).toBe(202);

    for (let i = 0; i < 5; i++)
      expect((await t.post('sales-orders', orders, from('192.0.2.66', 'Basic !!!'))).status).toBe(
        401,
      ); // malformed: not counted
    for (let i = 0; i < 3; i++)
      expect((await t.post('sales-orders', orders, from('192.0.2.66', wrong))).status).toBe(401);
    const refused = await t.post('sales-orders', orders, from('192.0.2.66', wrong));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await answer(refused)).toMatchObject({
      type: '/problems/too-many-requests',
      detail: expect.stringContaining('failed logins'),
    });
    // Another business behind the same address (a NAT, a platform's egress), not verified yet,
    // still gets in: the throttle is per (address, business id) (hardening: it used to get 429).
    expect(
      (await t.post('sales-orders', otherOrders, from('192.0.2.66', basicAuth(OTHER)))).status,
    ).toBe(202);
    // ...but a credential already verified passes everywhere, and the business's own address was never throttled.
    expect((await t.post('sales-orders', orders, from('192.0.2.66', basicAuth(ACME)))).status).toBe(
      202,
    );
    expect(
      (await t.post('sales-orders', orders, from('198.51.100.1', basicAuth(ACME)))).status,
    ).toBe(202);

    vi.setSystemTime(Date.now() + 30_000);
    expect(
      (await t.post('sales-orders', orders, from('192.0.2.66', wrong))).headers.get('retry-after'),
    ).toBe('30');
    vi.setSystemTime(Date.now() + 30_000);
    expect((await t.post('sales-orders', orders, from('192.0.2.66', wrong))).status).toBe(401);
    expect(await t.topology.count()).toBe(orders.length * 3 + otherOrders.length);
  });

  it('refuses every unverified attempt from an address past maxFailuresPerAddress, whatever business id it tries', async () => {
    const t = await createTestApp({
      yaml: 'http:\n  trustProxyHops: 1\n  abuse:\n    authThrottle: { windowSeconds: 60, maxFailuresPerClient: 100, maxFailuresPerAddress: 3, failuresBeforeSlowdown: 100, slowdownStepMs: 0, maxSlowdownMs: 0 }',
    });
    open.push(t);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const guess = basicAuth({ businessId: `GUESS${i}`, apiKey: 'guess-0000' });
      statuses.push((await t.post('sales-orders', [], from('192.0.2.77', guess))).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await t.post('sales-orders', [], from('192.0.2.77', basicAuth(OTHER)))).status).toBe(
      429,
    );
  });

  it('takes the client address from the socket unless proxies are configured (a client cannot pick its own address)', async () => {
    const t = await createTestApp({
      yaml: 'http:\n  abuse:\n    authThrottle: { windowSeconds: 60, maxFailuresPerClient: 2, maxFailuresPerAddress: 50, failuresBeforeSlowdown: 100, slowdownStepMs: 0, maxSlowdownMs: 0 }',
    });
    open.push(t);
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push(
        (
          await t.post('sales-orders', [], {
            auth: wrong,
            headers: { 'x-forwarded-for': `10.0.0.${i}` },
          })
        ).status,
      );
    expect(statuses).toEqual([401, 401, 429]);
  });
});

describe('failed logins per business id', () => {
  it('slows unverified attempts for a business under attack, capped, never refusing; its verified key is not slowed', async () => {
    const t = await createTestApp({
      yaml: 'http:\n  trustProxyHops: 1\n  abuse:\n    authThrottle: { windowSeconds: 300, maxFailuresPerClient: 1000, maxFailuresPerAddress: 1000, failuresBeforeSlowdown: 2, slowdownStepMs: 600, maxSlowdownMs: 1000 }',
    });
    open.push(t);
    expect(
      (await t.post('sales-orders', orders, from('198.51.100.1', basicAuth(ACME)))).status,
    ).toBe(202);

    const timed = async (init: ReturnType<typeof from>) => {
      const started = performance.now();
      const response = await t.post('sales-orders', [], init);
      return { status: response.status, ms: performance.now() - started };
    };
    // Guesses spread over many addresses: none is throttled per address.
    for (let i = 0; i < 2; i++) expect((await timed(from(`192.0.2.${i}`, wrong))).status).toBe(401);
    const third = await timed(from('192.0.2.10', wrong));
    expect(third).toMatchObject({ status: 401 });
    expect(third.ms).toBeGreaterThanOrEqual(590);
    for (let i = 0; i < 3; i++) {
      const capped = await timed(from(`192.0.2.${20 + i}`, wrong));
      expect(capped.status).toBe(401); // slowed, never 429
      expect(capped.ms).toBeGreaterThanOrEqual(990);
    }
    // The real business, verified before, is served at full speed; another business is untouched.
    expect((await timed(from('198.51.100.1', basicAuth(ACME)))).ms).toBeLessThan(900);
    const forOther = orders.map((o) => ({
      ...o,
      identifiers: { ...(o.identifiers as object), businessId: 'OTHER' },
    }));
    const started = performance.now();
    expect(
      (await t.post('sales-orders', forOther, from('198.51.100.2', basicAuth(OTHER)))).status,
    ).toBe(202);
    expect(performance.now() - started).toBeLessThan(900);
  });
});
