/**
 * One contract, two stores: the memory state (the default) and the Redis state (several
 * instances) answer the same operations the same way. Redis runs against the real server.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryState } from '../../src/http-state/memory.js';
import type { KeyRecord, SharedState } from '../../src/http-state/state.js';
import { removeKeys, testRedisState, uniquePrefix } from '../support/redis.js';

const prefixes: string[] = [];
const opened: SharedState[] = [];
afterAll(async () => {
  for (const state of opened) await state.close();
  for (const prefix of prefixes) await removeKeys(prefix);
});

const stores: Array<[string, () => Promise<SharedState>]> = [
  ['memory', async () => createMemoryState()],
  [
    'redis',
    async () => {
      const keyPrefix = uniquePrefix();
      prefixes.push(keyPrefix);
      const state = await testRedisState({ keyPrefix });
      opened.push(state);
      return state;
    },
  ],
];

const answer = { status: 202, correlationId: 'c1', contentType: 'application/json', body: '{}' };
const pending = (claimant: string): KeyRecord => ({ fingerprint: 'f', claimant });

describe.each(stores)('the %s state', (_name, open) => {
  it('claims a key once: a second claim gets the pending record, then the settled answer', async () => {
    const state = await open();
    const first = pending('one');
    expect(await state.claims.claim('k', first, 60_000)).toBeUndefined();
    expect(await state.claims.claim('k', pending('two'), 60_000)).toEqual(first);
    await state.claims.settle('k', first, { ...first, answer }, 60_000);
    expect(await state.claims.claim('k', pending('three'), 60_000)).toEqual({ ...first, answer });
  });

  it('settles only the claim it holds; forgetting frees the key', async () => {
    const state = await open();
    const mine = pending('mine');
    expect(await state.claims.claim('k2', mine, 60_000)).toBeUndefined();
    await state.claims.settle('k2', pending('not-mine'), { ...mine, answer }, 60_000);
    expect(await state.claims.claim('k2', pending('x'), 60_000)).toEqual(mine);
    await state.claims.settle('k2', mine, undefined, 60_000);
    expect(await state.claims.claim('k2', pending('again'), 60_000)).toBeUndefined();
  });

  it('frees a key whose claim outlives its time', async () => {
    const state = await open();
    expect(await state.claims.claim('short', pending('a'), 1)).toBeUndefined();
    await expect
      .poll(async () => state.claims.claim('short', pending('b'), 60_000))
      .toBeUndefined();
  });

  it('takes tokens from a bucket of `capacity`, then refuses, per key', async () => {
    const state = await open();
    const takes = [];
    for (let i = 0; i < 4; i++) takes.push(await state.buckets.take('b', 3, 3_600_000));
    expect(takes.map((t) => t.allowed)).toEqual([true, true, true, false]);
    expect(Math.floor(takes[0]!.tokens)).toBe(2);
    expect((await state.buckets.take('other', 3, 3_600_000)).allowed).toBe(true);
  });

  it('counts failures in the window, keeps the newest `cap`, and ages them', async () => {
    const state = await open();
    expect(await state.failures.recent('f', 60_000)).toEqual({ count: 0, oldestAgeMs: 0 });
    for (let i = 0; i < 5; i++) await state.failures.add('f', 60_000, 3);
    const recent = await state.failures.recent('f', 60_000);
    expect(recent.count).toBe(3);
    expect(recent.oldestAgeMs).toBeGreaterThanOrEqual(0);
    expect(recent.oldestAgeMs).toBeLessThan(60_000);
    await state.failures.add('gone', 1, 3);
    await expect.poll(async () => (await state.failures.recent('gone', 1)).count).toBe(0);
  });

  it('keeps a value until its time is out or it is deleted, one per key', async () => {
    const state = await open();
    expect(await state.values.get('v')).toBeUndefined();
    await state.values.set('v', '{"businessId":"ACME"}', 60_000);
    await state.values.set('w', 'other', 60_000);
    expect(await state.values.get('v')).toBe('{"businessId":"ACME"}');
    await state.values.set('v', 'replaced', 60_000);
    expect(await state.values.get('v')).toBe('replaced');
    await state.values.delete('v');
    expect(await state.values.get('v')).toBeUndefined();
    expect(await state.values.get('w')).toBe('other');
    await state.values.set('brief', 'x', 1);
    await expect.poll(async () => state.values.get('brief')).toBeUndefined();
  });
});
