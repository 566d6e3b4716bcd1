import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { ConfigError } from '../operator-errors.js';
import type { Logger } from '../log.js';
import { exposedSecretFile } from '../secret-files.js';
import { createMemoryState } from './memory.js';
import { openRedisState, redisLocation } from './redis.js';
import { sentinelLocation } from './redis-sentinel.js';
import type { SharedState } from './state.js';

export type { SharedState } from './state.js';

/**
 * The state as configured: on Redis when `sharedState.redis.url` or `sentinels` is set (connected
 * before the service listens; unreachable at start-up, it starts all the same and keeps trying),
 * otherwise in this process's memory.
 */
export async function openSharedState(config: Readonly<Config>, log: Logger): Promise<SharedState> {
  const { idempotency } = config.http.abuse;
  const { redis } = config.sharedState;
  if (!redis.url && !redis.sentinels)
    return createMemoryState({
      maxEntries: idempotency.maxEntries,
      maxBytes: idempotency.maxBytes,
    });
  const sentinel = redis.sentinels && {
    sentinels: redis.sentinels,
    masterName: redis.masterName ?? '', // required with sentinels (config.ts)
    ...(redis.username !== undefined && { username: redis.username }),
    ...(redis.db !== undefined && { db: redis.db }),
    ...(redis.sentinelPasswordFile && {
      sentinelPassword: readPassword(redis.sentinelPasswordFile, 'sentinelPasswordFile'),
    }),
  };
  const state = await openRedisState({
    ...(sentinel ? { sentinel } : { url: redis.url ?? '' }),
    keyPrefix: redis.keyPrefix,
    commandTimeoutMs: redis.commandTimeoutMs,
    log,
    ...(redis.passwordFile && { password: readPassword(redis.passwordFile, 'passwordFile') }),
  });
  const where = sentinel ? sentinelLocation(sentinel) : redisLocation(redis.url ?? '');
  log.info({ sharedState: where }, 'shared state on Redis');
  return state;
}

function readPassword(file: string, key: 'passwordFile' | 'sentinelPasswordFile'): string {
  const problem = (message: string) =>
    new ConfigError([{ file, field: `sharedState.redis.${key}`, message }]);
  let password: string;
  try {
    const exposed = exposedSecretFile(file);
    if (exposed) throw problem(exposed);
    password = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw problem(`cannot read it: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  if (!password) throw problem('the file is empty');
  return password;
}
