/** The rate limiter and the failed-login throttle on their own clock: refill, windows, bounded memory. */
import { describe, expect, it } from 'vitest';
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
    maxFailuresPerAddress: 5,
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
    expect(await throttle.retryAfter('192.0.2.1', 'ACME')).toBe(57); // the third-newest failure (t=2 s) leaves at 62 s
    expect(await throttle.retryAfter('192.0.2.2', 'ACME')).toBe(0);
    now = 62_000;
    expect(await throttle.retryAfter('192.0.2.1', 'ACME')).toBe(0);
    now = 200_000;
    expect(await throttle.slowdownMs('ACME')).toBe(0);
  });

  it('throttles an (address, business id) pair, with a higher ceiling for the address: a neighbour behind the same NAT keeps logging in', async () => {
    let now = 0;
    const throttle = createAuthThrottle({ ...options, now: () => now });
    for (let i = 0; i < 3; i++) await throttle.recordFailure('198.51.100.7', 'ACME');
    expect(await throttle.retryAfter('198.51.100.7', 'ACME')).toBe(60);
    expect(await throttle.retryAfter('198.51.100.7', 'GLOBEX')).toBe(0);
    now = 1000;
    for (let i = 0; i < 2; i++) await throttle.recordFailure('198.51.100.7', `guess-${i}`);
    // Five failures from the address in all: now every unverified attempt from it waits.
    expect(await throttle.retryAfter('198.51.100.7', 'GLOBEX')).toBe(59);
    expect(await throttle.retryAfter('198.51.100.8', 'ACME')).toBe(0);
  });

  it('remembers at most maxKeys clients, addresses and business ids (each)', async () => {
    const throttle = createAuthThrottle({ ...options, maxKeys: 50 });
    for (let i = 0; i < 5000; i++)
      await throttle.recordFailure(`10.0.${i >> 8}.${i & 255}`, `guess-${i}`);
    expect(throttle.size).toBe(150);
  });
});
