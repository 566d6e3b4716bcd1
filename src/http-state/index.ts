import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import { exposedSecretFile } from '../secret-files.js';
import { createMemoryState } from './memory.js';
import { openRedisState, redisLocation } from './redis.js';
import type { SharedState } from './state.js';

export type { SharedState } from './state.js';

/**
 * The state as configured: on Redis when `sharedState.redis.url` is set (connected before the
 * service listens; unreachable at start-up, the start fails), otherwise in this process's memory.
 */
export async function openSharedState(config: Readonly<Config>, log: Logger): Promise<SharedState> {
  const { idempotency } = config.http.abuse;
  const { redis } = config.sharedState;
  if (!redis.url)
    return createMemoryState({
      maxEntries: idempotency.maxEntries,
      maxBytes: idempotency.maxBytes,
    });
  const state = await openRedisState({
    url: redis.url,
    keyPrefix: redis.keyPrefix,
    commandTimeoutMs: redis.commandTimeoutMs,
    log,
    ...(redis.passwordFile && { password: readPassword(redis.passwordFile) }),
  });
  log.info({ sharedState: redisLocation(redis.url) }, 'shared state on Redis');
  return state;
}

function readPassword(file: string): string {
  const problem = (message: string) =>
    new ConfigError([{ file, field: 'sharedState.redis.passwordFile', message }]);
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
