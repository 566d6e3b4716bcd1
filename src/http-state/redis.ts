import type { Logger } from '../log.js';
import { createMemoryState } from './memory.js';
import {
  createRedisConnection,
  NotReplicated,
  type RedisConnection,
  type RedisTarget,
  Unanswered,
} from './redis-connection.js';
import { sentinelLocation } from './redis-sentinel.js';
import type { BucketTake, KeyRecord, RecentFailures, SharedState } from './state.js';

/**
 * The state on Redis, shared by every instance that uses the same server and `keyPrefix`.
 * Each operation is one round trip and atomic: a Lua script (redis-scripts.ts), timed by the
 * Redis server's clock (instances whose clocks differ still agree), over one connection that
 * checks every reply is its call's (redis-connection.ts).
 *
 * When Redis cannot be reached, an `Idempotency-Key` cannot be honoured: claims fail with
 * `SharedStateUnavailable` (the request is answered 503, never run unprotected). Rate limits and
 * the login throttle fall back to this instance's memory until Redis is back — each instance
 * then enforces its own share, as without Redis. See docs/operations-instances.md.
 */
export type RedisStateOptions = RedisTarget & {
  /** Overrides the URL's password, or is the master's behind Sentinel (read from a file). */
  readonly password?: string;
  /** Put before every key, so services (and tests) sharing a server stay apart. */
  readonly keyPrefix: string;
  /** A command not answered within this is failed (the store counts as unreachable). */
  readonly commandTimeoutMs: number;
  readonly log: Logger;
};

/** Where the store is, for logs and messages: host, port and database, never the password. */
export function redisLocation(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
  } catch {
    return '[unparseable Redis URL]';
  }
}

/**
 * Connects and gives the state. Redis unreachable at start-up is an outage like a later one
 * (redis-connection.ts warns and keeps trying), so the service comes up before its Redis.
 */
export async function openRedisState(options: RedisStateOptions): Promise<SharedState> {
  const { keyPrefix, log } = options;
  const where =
    options.sentinel === undefined
      ? redisLocation(options.url)
      : sentinelLocation(options.sentinel);
  const unsure = unsureClaims(() => connection);
  const connection = createRedisConnection({
    ...(options.sentinel === undefined ? { url: options.url } : { sentinel: options.sentinel }),
    ...(options.password !== undefined && { password: options.password }),
    commandTimeoutMs: options.commandTimeoutMs,
    where,
    log,
    onReady: unsure.release,
  });
  await connection.open(); // never fails: an unreachable Redis is an outage from the start

  // Limits go on per instance while Redis is away (as without Redis); never a 5xx for them.
  const local = createMemoryState();
  const orLocal = async <T>(shared: () => Promise<T>, fallback: () => T): Promise<T> => {
    try {
      return await shared();
    } catch {
      return fallback();
    }
  };

  return {
    kind: 'redis',
    get reachable() {
      return connection.reachable;
    },
    get reachedOnce() {
      return connection.reachedOnce;
    },
    claims: {
      async claim(id, pending, ttlMs) {
        const record = JSON.stringify(pending);
        let held: unknown;
        try {
          [held] = await connection.run('claimKey', keyPrefix + id, [record, ttlMs]);
        } catch (error) {
          if (error instanceof Unanswered) unsure.add(keyPrefix + id, record, ttlMs);
          // Held by the master only: taken back now, so that the retry runs (not a 409).
          if (error instanceof NotReplicated) unsure.release();
          throw error;
        }
        return held === undefined ? undefined : (JSON.parse(String(held)) as KeyRecord);
      },
      async settle(id, pending, settled, ttlMs) {
        await connection.run('settleKey', keyPrefix + id, [
          JSON.stringify(pending),
          settled ? JSON.stringify(settled) : '',
          ttlMs,
        ]);
      },
    },
    buckets: {
      take: (key, capacity, windowMs) =>
        orLocal<BucketTake>(
          async () => {
            const [allowed, tokens] = await connection.run('takeToken', `${keyPrefix}rate:${key}`, [
              capacity,
              windowMs,
            ]);
            return { allowed: allowed === 1, tokens: Number(tokens) };
          },
          () => local.buckets.take(key, capacity, windowMs),
        ),
    },
    failures: {
      recent: (key, windowMs) =>
        orLocal<RecentFailures>(
          async () => {
            const [count, oldestAgeMs] = await connection.run('recentFailures', keyPrefix + key, [
              windowMs,
            ]);
            return { count: Number(count), oldestAgeMs: Number(oldestAgeMs) };
          },
          () => local.failures.recent(key, windowMs),
        ),
      add: (key, windowMs, cap) =>
        orLocal<void>(
          async () => void (await connection.run('addFailure', keyPrefix + key, [windowMs, cap])),
          () => local.failures.add(key, windowMs, cap),
        ),
    },
    // No fallback to memory: a value another instance wrote is not here (a portal session on
    // Redis is then not found: the page says the portal is not available, not "signed out").
    values: {
      async get(key) {
        const [value] = await connection.run('getValue', `${keyPrefix}value:${key}`, []);
        return value === undefined ? undefined : String(value);
      },
      async set(key, value, ttlMs) {
        await connection.run('setValue', `${keyPrefix}value:${key}`, [value, ttlMs]);
      },
      async delete(key) {
        await connection.run('deleteValue', `${keyPrefix}value:${key}`, []);
      },
    },
    close: () => connection.close(),
  };
}

/** Claims at most remembered as unsure; past it the oldest are left to their in-flight expiry. */
const MAX_UNSURE = 10_000;

/**
 * Claims whose reply was lost: Redis may hold them, pending, until their in-flight expiry, and
 * every retry of their request would be answered 409 meanwhile. Each is released (deleted if it
 * still holds exactly that pending record, which names a claimant of its own) as soon as a
 * connection is ready again: the retry the 503 asked for then runs.
 */
function unsureClaims(connection: () => RedisConnection) {
  const unsure = new Map<string, { record: string; until: number }>();
  /** A release is running; `again`: a connection became ready meanwhile, run once more. */
  let releasing = false;
  let again = false;
  const releaseAll = async () => {
    for (const [key, { record, until }] of unsure) {
      if (until > Date.now()) {
        try {
          await connection().run('settleKey', key, [record, '', 0]);
        } catch {
          return; // not answered now: the next connection tries again
        }
      }
      unsure.delete(key);
    }
  };
  const release = (): void => {
    if (releasing) {
      again = true;
      return;
    }
    releasing = true;
    again = false;
    void releaseAll().finally(() => {
      releasing = false;
      if (again) release();
    });
  };
  return {
    add(key: string, record: string, ttlMs: number): void {
      unsure.delete(key);
      unsure.set(key, { record, until: Date.now() + ttlMs });
      if (unsure.size > MAX_UNSURE) unsure.delete(unsure.keys().next().value!);
    },
    release,
  };
}
