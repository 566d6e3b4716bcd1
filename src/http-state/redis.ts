import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { reconnectDelay } from '../backoff.js';
import type { Logger } from '../log.js';
import { createMemoryState } from './memory.js';
import {
  SharedStateUnavailable,
  type BucketTake,
  type KeyRecord,
  type RecentFailures,
  type SharedState,
} from './state.js';

/**
 * The state on Redis, shared by every instance that uses the same server and `keyPrefix`.
 * Each operation is one round trip and atomic: `SET NX` for a claim, a Lua script for the rest,
 * timed by the Redis server's clock (instances whose clocks differ still agree).
 *
 * When Redis cannot be reached, an `Idempotency-Key` cannot be honoured: claims fail with
 * `SharedStateUnavailable` (the request is answered 503, never run unprotected). Rate limits and
 * the login throttle fall back to this instance's memory until Redis is back — each instance
 * then enforces its own share, as without Redis. See docs/operations-instances.md.
 */
export interface RedisStateOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://` (TLS). */
  readonly url: string;
  /** Overrides the URL's password (read from a file). */
  readonly password?: string;
  /** Put before every key, so services (and tests) sharing a server stay apart. */
  readonly keyPrefix: string;
  /** A command not answered within this is failed (the store counts as unreachable). */
  readonly commandTimeoutMs: number;
  readonly log: Logger;
}

// KEYS[1] = the key; ARGV: the pending record as set, the settled record ('' = forget), ttl ms.
const SETTLE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
end
return 0`;

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// The token bucket of memory.ts, on Redis: ARGV capacity, windowMs. Returns {allowed, tokens}.
const TAKE = `${NOW}
local capacity = tonumber(ARGV[1])
local perMs = capacity / tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1]) or capacity
local at = tonumber(held[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * perMs)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / perMs) + 1000)
return {allowed, tostring(tokens)}`;

// A sorted set of failure times: ARGV windowMs. Returns {count, oldestAgeMs}.
const RECENT = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
local count = redis.call('ZCARD', KEYS[1])
if count == 0 then return {0, 0} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {count, now - tonumber(oldest[2])}`;

// ARGV windowMs, cap, a unique member.
const ADD = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
redis.call('ZADD', KEYS[1], now, ARGV[3])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0`;

interface Scripts {
  settleKey(key: string, pending: string, settled: string, ttlMs: number): Promise<number>;
  takeToken(key: string, capacity: number, windowMs: number): Promise<[number, string]>;
  recentFailures(key: string, windowMs: number): Promise<[number, number]>;
  addFailure(key: string, windowMs: number, cap: number, member: string): Promise<number>;
}

/** Where the store is, for logs and messages: host, port and database, never the password. */
export function redisLocation(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
  } catch {
    return '[unparseable Redis URL]';
  }
}

/** Connects (rejects when Redis cannot be reached at start-up: fail loudly) and gives the state. */
export async function openRedisState(options: RedisStateOptions): Promise<SharedState> {
  const { log, keyPrefix } = options;
  const where = redisLocation(options.url);
  const redis = new Redis(options.url, {
    ...(options.password !== undefined && { password: options.password }),
    lazyConnect: true,
    // Fail at once while disconnected instead of queueing: a request must not wait for Redis.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs,
    connectTimeout: Math.max(1000, options.commandTimeoutMs * 5),
    retryStrategy: (attempt) => reconnectDelay(attempt, 100, 5000),
  });
  for (const [name, lua, keys] of [
    ['settleKey', SETTLE, 1],
    ['takeToken', TAKE, 1],
    ['recentFailures', RECENT, 1],
    ['addFailure', ADD, 1],
  ] as const)
    redis.defineCommand(name, { lua, numberOfKeys: keys });
  const scripts = redis as unknown as Scripts;

  let outage = false;
  redis.on('error', (error: Error) => {
    if (outage) return;
    outage = true;
    log.warn(
      { sharedState: where, error: error.message },
      'shared state unreachable: Idempotency-Key requests answered 503, limits kept per instance meanwhile',
    );
  });
  redis.on('ready', () => {
    if (outage) log.info({ sharedState: where }, 'shared state reachable again');
    outage = false;
  });
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new SharedStateUnavailable(
      `cannot reach the shared state at ${where}: ${(error as Error).message}`,
      { cause: error },
    );
  }

  // Limits go on per instance while Redis is away (as without Redis); never a 5xx for them.
  const local = createMemoryState();
  const orLocal = async <T>(shared: () => Promise<T>, fallback: () => T): Promise<T> => {
    try {
      return await shared();
    } catch (error) {
      if (!outage) redis.emit('error', error);
      return fallback();
    }
  };
  const unavailable = (error: unknown) =>
    new SharedStateUnavailable(`the shared state at ${where} did not answer`, { cause: error });

  return {
    kind: 'redis',
    claims: {
      async claim(id, pending, ttlMs) {
        let held: string | null;
        try {
          held = await redis.set(keyPrefix + id, JSON.stringify(pending), 'PX', ttlMs, 'NX', 'GET');
        } catch (error) {
          throw unavailable(error);
        }
        return held === null ? undefined : (JSON.parse(held) as KeyRecord);
      },
      async settle(id, pending, settled, ttlMs) {
        try {
          await scripts.settleKey(
            keyPrefix + id,
            JSON.stringify(pending),
            settled ? JSON.stringify(settled) : '',
            ttlMs,
          );
        } catch (error) {
          throw unavailable(error);
        }
      },
    },
    buckets: {
      take: (key, capacity, windowMs) =>
        orLocal<BucketTake>(
          async () => {
            const [allowed, tokens] = await scripts.takeToken(
              `${keyPrefix}rate:${key}`,
              capacity,
              windowMs,
            );
            return { allowed: allowed === 1, tokens: Number(tokens) };
          },
          () => local.buckets.take(key, capacity, windowMs),
        ),
    },
    failures: {
      recent: (key, windowMs) =>
        orLocal<RecentFailures>(
          async () => {
            const [count, oldestAgeMs] = await scripts.recentFailures(keyPrefix + key, windowMs);
            return { count, oldestAgeMs };
          },
          () => local.failures.recent(key, windowMs),
        ),
      add: (key, windowMs, cap) =>
        orLocal<void>(
          async () => void (await scripts.addFailure(keyPrefix + key, windowMs, cap, randomUUID())),
          () => local.failures.add(key, windowMs, cap),
        ),
    },
    async close() {
      try {
        await redis.quit();
      } catch {
        redis.disconnect();
      }
    },
  };
}
