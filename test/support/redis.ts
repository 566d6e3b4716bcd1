import { Redis } from 'ioredis';
import { createLogger, type Logger } from '../../src/log.js';
import { openRedisState } from '../../src/http-state/redis.js';
import type { SharedState } from '../../src/http-state/state.js';
import { uniqueName } from './broker.js';

/** The Redis the suite talks to; `test/setup/services.ts` fails the run when it is down. */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test (or earlier run) uses: tests sharing the server never meet. */
export function uniquePrefix(): string {
  return `${uniqueName('test')}:`;
}

/** The Redis state under a fresh prefix (`url` e.g. a TCP proxy's in front of the server). */
export function testRedisState(
  options: { url?: string; keyPrefix?: string; commandTimeoutMs?: number; log?: Logger } = {},
): Promise<SharedState> {
  return openRedisState({
    url: options.url ?? REDIS_URL,
    keyPrefix: options.keyPrefix ?? uniquePrefix(),
    commandTimeoutMs: options.commandTimeoutMs ?? 1000,
    log: options.log ?? createLogger({ level: 'silent' }),
  });
}

/** Deletes every key under `prefix` (what a test left), then disconnects. */
export async function removeKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
