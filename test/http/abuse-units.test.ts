/** The rate limiter and the failed-login throttle on their own clock: refill, windows, bounded memory. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createAuthThrottle } from '../../src/http/auth-throttle.js';
import { createRateLimiter, rateLimitHeaders } from '../../src/http/rate-limit.js';

describe('token bucket', async () => {
  it('refills at requests/windowSeconds and reports remaining, reset and retry-after', async () => {
    let now = 0;
    const limiter = createRateLimiter({ requests: 2, windowSeconds: 10, now: () => now });
    expect(await limiter.take('A')).toEqual({
      allowed: true,
      remaining: 1,
      resetSeconds: 5,
      retryAfterSeconds: 0,
    });
    expect(await limiter.take('A')).toMatchObject({
      allowed: true,
      remaining: 0,
      resetSeconds: 10,
    });
    expect(await limiter.take('A')).toEqual({
      allowed: false,
      remaining: 0,
      resetSeconds: 10,
      retryAfterSeconds: 5,
    });
    now = 2500; // half a token back
    expect(await limiter.take('A')).toMatchObject({ allowed: false, retryAfterSeconds: 3 });
    now = 5000;
    const decision = await limiter.take('A');
    expect(decision).toMatchObject({ allowed: true, remaining: 0 });
    expect(rateLimitHeaders(limiter, decision)).toEqual({
      'ratelimit-policy': '"default";q=2;w=10',
      ratelimit: '"default";r=0;t=10',
    });
  });

  it('holds at most maxKeys buckets, whatever ids it is given (sandbox accepts any)', async () => {
    let now = 0;
    const limiter = createRateLimiter({
      requests: 5,
      windowSeconds: 1,
      now: () => now,
      maxKeys: 100,
    });
    for (let i = 0; i < 10_000; i++) {
      now += 1;
      await limiter.take(`business-${i}`);
    }
    expect(limiter.size).toBeLessThanOrEqual(100);
  });
});

describe('failed-login throttle', async () => {
  const options = {
    windowSeconds: 60,
    maxFailuresPerClient: 3,
    maxBusinessIdsPerAddress: 5,
    failuresBeforeSlowdown: 2,
    slowdownStepMs: 100,
    maxSlowdownMs: 250,
  };

  it('blocks an address for the rest of the window after its failures, and slows a business id stepwise up to the cap', async () => {
    let now = 0;
    const throttle = createAuthThrottle({ ...options, now: () => now });
    const slowdowns: number[] = [];
    for (let i = 0; i < 5; i++) {
      slowdowns.push(await throttle.slowdownMs('ACME'));
      await throttle.recordFailure('192.0.2.1', 'ACME');
      now += 1000;
    }
    expect(slowdowns).toEqual([0, 0, 100, 200, 250]);
    // the third-newest failure (t=2 s) leaves at 62 s
    expect(await throttle.refusal('192.0.2.1', 'ACME')).toEqual({
      reason: 'client',
      retryAfterSeconds: 57,
    });
    expect(await throttle.refusal('192.0.2.2', 'ACME')).toBeUndefined();
    now = 62_000;
    expect(await throttle.refusal('192.0.2.1', 'ACME')).toBeUndefined();
    now = 200_000;
    expect(await throttle.slowdownMs('ACME')).toBe(0);
  });

  it('counts failures per business id first: a key guessed wrongly locks that id from that address, not another business behind it', async () => {
    const now = 0;
    const throttle = createAuthThrottle({ ...options, now: () => now });
    for (let i = 0; i < 3; i++) await throttle.recordFailure('198.51.100.7', 'ACME');
    expect(await throttle.refusal('198.51.100.7', 'ACME')).toEqual({
      reason: 'client',
      retryAfterSeconds: 60,
    });
    expect(await throttle.refusal('198.51.100.7', 'GLOBEX')).toBeUndefined();
    // However often one id fails, it counts once towards the address's ceiling.
    for (let i = 0; i < 50; i++) await throttle.recordFailure('198.51.100.7', 'ACME');
    expect(await throttle.refusal('198.51.100.7', 'GLOBEX')).toBeUndefined();
  });

  it("the hardening round's scenario, with the shipped defaults: 200 failed logins across 11 business ids from one address leave another business free to log in", async () => {
    const defaults = (
      parse(readFileSync(new URL('../../config/default.yaml', import.meta.url), 'utf8')) as {
        http: { abuse: { authThrottle: Parameters<typeof createAuthThrottle>[0] } };
      }
    ).http.abuse.authThrottle;
    expect(defaults.maxBusinessIdsPerAddress).toBeGreaterThan(11);
    const throttle = createAuthThrottle(defaults);
    let failures = 0;
    for (let i = 0; failures < 200; i = (i + 1) % 11) {
      // A connector that keeps failing is refused per id (`client`), and nothing more is counted.
      if (await throttle.refusal('192.0.2.50', `TENANT${i}`)) continue;
      await throttle.recordFailure('192.0.2.50', `TENANT${i}`);
      failures++;
    }
    expect(await throttle.refusal('192.0.2.50', 'OTHER')).toBeUndefined();
    // TENANT0 failed 19 times (200 = 11 × 18 + 2): one more, and that id alone is refused from there.
    await throttle.recordFailure('192.0.2.50', 'TENANT0');
    expect(await throttle.refusal('192.0.2.50', 'TENANT0')).toMatchObject({ reason: 'client' });
    expect(await throttle.refusal('192.0.2.50', 'OTHER')).toBeUndefined();
  });

  it('past maxBusinessIdsPerAddress ids failing from an address, refuses other ids from it (a spray) until the oldest leaves the window; the failing ids keep their own limit; 0 turns the ceiling off', async () => {
    let now = 0;
    const throttle = createAuthThrottle({ ...options, now: () => now });
    for (let i = 0; i < 5; i++) {
      expect(await throttle.refusal('192.0.2.9', `GUESS${i}`)).toBeUndefined();
      await throttle.recordFailure('192.0.2.9', `GUESS${i}`);
      now += 1000;
    }
    expect(await throttle.refusal('192.0.2.9', 'GUESS5')).toEqual({
      reason: 'address',
      retryAfterSeconds: 55,
    });
    expect(await throttle.refusal('192.0.2.9', 'OTHER')).toMatchObject({ reason: 'address' });
    expect(await throttle.refusal('192.0.2.9', 'GUESS0')).toBeUndefined();
    expect(await throttle.refusal('192.0.2.10', 'OTHER')).toBeUndefined();
    now = 60_001; // GUESS0's failure has left the window
    expect(await throttle.refusal('192.0.2.9', 'OTHER')).toBeUndefined();

    const open = createAuthThrottle({ ...options, maxBusinessIdsPerAddress: 0 });
    for (let i = 0; i < 100; i++) await open.recordFailure('192.0.2.9', `GUESS${i}`);
    expect(await open.refusal('192.0.2.9', 'OTHER')).toBeUndefined();
    expect(await open.refusal('192.0.2.9', 'GUESS1')).toBeUndefined();
  });

  it('remembers at most maxKeys clients, addresses and business ids (each)', async () => {
    const throttle = createAuthThrottle({ ...options, maxKeys: 50 });
    for (let i = 0; i < 5000; i++)
      await throttle.recordFailure(`10.0.${i >> 8}.${i & 255}`, `guess-${i}`);
    expect(throttle.size).toBe(150);
  });
});
