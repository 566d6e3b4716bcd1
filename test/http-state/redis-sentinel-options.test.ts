/**
 * Behind Sentinel there is no URL to carry the ACL user and the database number, so the
 * configuration has `sharedState.redis.username` and `db` (issue 38, item 20). A stand-in sentinel
 * names the real Redis as the master; the state must sign in as that user, in that database.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openSharedState } from '../../src/http-state/index.js';
import { createLogger } from '../../src/log.js';
import { uniqueName } from '../support/broker.js';
import { startFakeSentinel } from '../support/fake-sentinel.js';
import { REDIS_URL, uniquePrefix } from '../support/redis.js';
import { tempFolder } from '../support/temp.js';

const DB = 5;
const admin = new Redis(REDIS_URL);
const user = uniqueName('ingest-acl').replaceAll('.', '-');
const password = `pw-${uniqueName('x')}`;
const keyPrefix = uniquePrefix();
const open: Array<{ close(): Promise<void> }> = [];

afterAll(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
  await admin.call('acl', 'deluser', user);
  await admin.select(DB);
  const keys = await admin.keys(`${keyPrefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  admin.disconnect();
});

describe('the shared state behind Sentinel, with an ACL user and a database number', () => {
  it('signs in on the master as sharedState.redis.username and keeps its keys in sharedState.redis.db', async () => {
    await admin.call('acl', 'setuser', user, 'on', `>${password}`, '~*', '+@all');
    const master = new URL(REDIS_URL);
    const sentinel = await startFakeSentinel({
      masterName: 'acl-state',
      master: { host: master.hostname, port: Number(master.port || 6379) },
    });
    open.push(sentinel);
    const temp = tempFolder('sentinel-options-');
    const config = loadConfig({
      env: {
        INGEST_ENV: 'development',
        INGEST_CONFIG: temp.write(
          'config.yaml',
          `sharedState:\n  redis:\n    keyPrefix: "${keyPrefix}"\n    passwordFile: ${temp.write('password', password)}\n`,
        ),
        REDIS_SENTINELS: sentinel.address,
        REDIS_SENTINEL_MASTER: 'acl-state',
        REDIS_USERNAME: user,
        REDIS_DB: String(DB),
      },
    });
    const state = await openSharedState(config, createLogger({ level: 'silent' }));
    open.push(state);
    expect(state.reachable).toBe(true);
    const pending = { fingerprint: 'f', claimant: 'c' };
    expect(await state.claims.claim('acl-key', pending, 60_000)).toBeUndefined();

    const clients = String(await admin.call('client', 'list'));
    expect(clients).toMatch(new RegExp(`db=${DB} .*user=${user}`));
    await admin.select(DB);
    expect(await admin.exists(`${keyPrefix}acl-key`)).toBe(1);
    await admin.select(0);
    expect(await admin.exists(`${keyPrefix}acl-key`)).toBe(0);
  });
});
