/**
 * Behind Sentinel, ioredis can stop reconnecting for good: if the sentinels announce a failover
 * (`+switch-master`) while a reconnect is asking one of them where the master is, its failover
 * detector closes the connector under that reconnect, the reconnect fails with "Connection is
 * closed." and the client ends, with no retry left. In the fleet tests this showed as a service
 * cut off from Redis after a master kill (every keyed request 503 for good). A fake sentinel
 * makes that timing happen on demand, in front of the real Redis: the state must be served again
 * at once, on a new connection.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { openRedisState } from '../../src/http-state/redis.js';
import { startFakeSentinel } from '../support/fake-sentinel.js';
import { LogCapture } from '../support/http-app.js';
import { REDIS_URL, removeKeys, uniquePrefix } from '../support/redis.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

describe('the Redis state behind Sentinel, a failover announced during a reconnect', () => {
  it('connects again at once instead of going quiet', async () => {
    // The proxy stands for the master: cutting it is the master going away.
    const master = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
    });
    open.push(master);
    const sentinel = await startFakeSentinel({
      masterName: 'state',
      master: { host: '127.0.0.1', port: master.port },
    });
    open.push(sentinel);
    const keyPrefix = uniquePrefix();
    open.push({ close: () => removeKeys(keyPrefix) });
    const logs = new LogCapture();
    const state = await openRedisState({
      sentinel: { sentinels: [sentinel.address], masterName: 'state' },
      keyPrefix,
      commandTimeoutMs: 1000,
      log: createLogger({ level: 'info', destination: logs }),
    });
    open.push(state);
    const record = (id: string) => ({ fingerprint: `f-${id}`, claimant: `c-${id}` });
    expect(await state.claims.claim('before', record('before'), 60_000)).toBeUndefined();

    const askedBefore = sentinel.asked;
    sentinel.announceOnNextAsk(50);
    master.cut();

    // The reconnect asked (and met the announcement), then the state is served again.
    await vi.waitFor(() => expect(sentinel.asked).toBeGreaterThan(askedBefore), {
      timeout: 5000,
    });
    await vi.waitFor(() => expect(state.reachable).toBe(true), { timeout: 5000, interval: 50 });
    expect(await state.claims.claim('after', record('after'), 60_000)).toBeUndefined();
    expect(logs.lines.map((line) => line.msg)).toContain('shared state reachable again');
  });
});
