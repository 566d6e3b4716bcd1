/**
 * The Redis state under network faults, with keyed load running: the connection cut again and
 * again, and replies put out of step with their commands (a middlebox that repeats a chunk: the
 * client reads more replies than it sent commands, as the outage report saw after its cuts).
 * The process never crashes, no call ever gets another call's answer (each claim reads back its
 * own record), a fault costs only the calls in flight (refused: their requests are answered 503),
 * and the store serves again on its own.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  SharedStateUnavailable,
  type KeyRecord,
  type SharedState,
} from '../../src/http-state/state.js';
import { createLogger } from '../../src/log.js';
import { LogCapture } from '../support/http-app.js';
import { REDIS_URL, removeKeys, testRedisState, uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

// An exception nothing catches would end a service: recorded here, so the test names it.
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => void uncaught.push(error);
beforeAll(() => void process.on('uncaughtException', onUncaught));
afterAll(() => void process.off('uncaughtException', onUncaught));

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

interface Tally {
  /** Claim, settle and replay all answered, each with its own record. */
  served: number;
  /** Calls refused with SharedStateUnavailable (their requests would be answered 503). */
  refused: number;
  /** Answers that belonged to another call, or errors of another kind. */
  readonly wrong: string[];
}

const answerOf = (id: string) => ({
  status: 202,
  correlationId: `c-${id}`,
  contentType: 'application/json',
  body: JSON.stringify({ id }),
});

/**
 * One client's keyed requests, one after another, each on a key of its own. An even worker's
 * batches are answered (claim, settle with the answer, a retry replayed); an odd worker's are
 * refused after the claim (settled without an answer: the key is forgotten, a retry runs again).
 */
async function keyedLoad(state: SharedState, tally: Tally, worker: number, stop: () => boolean) {
  const answered = worker % 2 === 0;
  for (let i = 0; !stop(); i++) {
    const id = `w${worker}-${i}`;
    const mine: KeyRecord = { fingerprint: `f-${id}`, claimant: `first-${id}` };
    const retry: KeyRecord = { fingerprint: mine.fingerprint, claimant: `retry-${id}` };
    try {
      // What the rate limit takes before each batch: its replies are the ones the report saw.
      const take = await state.buckets.take('load', 1_000_000, 60_000);
      if (typeof take.allowed !== 'boolean' || !(take.tokens >= 0))
        tally.wrong.push(`take got ${JSON.stringify(take)}`);
      const held = await state.claims.claim(id, mine, 60_000);
      if (held !== undefined) {
        tally.wrong.push(`the claim of unused key ${id} got ${JSON.stringify(held)}`);
        continue;
      }
      await state.claims.settle(
        id,
        mine,
        answered ? { ...mine, answer: answerOf(id) } : undefined,
        60_000,
      );
      const again = await state.claims.claim(id, retry, 60_000);
      const own = answered
        ? again?.claimant === mine.claimant && again.answer?.body === answerOf(id).body
        : again === undefined;
      if (own) tally.served += 1;
      else tally.wrong.push(`the retry of ${id} got ${JSON.stringify(again)}`);
    } catch (error) {
      if (!(error instanceof SharedStateUnavailable))
        tally.wrong.push(`${id}: ${(error as Error).stack ?? String(error)}`);
      tally.refused += 1;
      // A refusal is immediate: let the event loop turn before the next try.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

describe('the Redis state under network faults', () => {
  it('never crashes nor gives one call another call’s answer: cuts and replies out of step, under keyed load', async () => {
    const proxy: TcpProxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
    });
    open.push(proxy);
    const keyPrefix = uniquePrefix();
    open.push({ close: () => removeKeys(keyPrefix) });
    const logs = new LogCapture();
    const log = createLogger({ level: 'info', destination: logs });
    const state = await testRedisState({ url: proxy.urlFor(REDIS_URL), keyPrefix, log });
    open.push(state);

    const tally: Tally = { served: 0, refused: 0, wrong: [] };
    let stopped = false;
    const load = Array.from({ length: 16 }, (_, worker) =>
      keyedLoad(state, tally, worker, () => stopped),
    );
    const faultless = () => ({ wrong: tally.wrong.slice(0, 5), uncaught: uncaught.slice(0, 3) });
    const faulted = () => tally.wrong.length > 0 || uncaught.length > 0;
    /** Waits until the store has served `more` keyed requests since now (or has gone wrong). */
    const serving = async (more: number) => {
      const target = tally.served + more;
      await expect
        .poll(() => faulted() || tally.served >= target, { timeout: 20_000, interval: 20 })
        .toBe(true);
      expect(faultless()).toEqual({ wrong: [], uncaught: [] });
    };
    try {
      await serving(50);
      for (let round = 0; round < 6; round++) {
        if (round % 2 === 0) proxy.repeatDownstream();
        else proxy.cut();
        await serving(50);
      }
    } finally {
      stopped = true;
      await Promise.all(load);
    }
    expect(faultless()).toEqual({ wrong: [], uncaught: [] });
    expect(tally.refused).toBeGreaterThan(0);
    // Each repeated chunk was found out and its connection replaced (a cut only reconnects).
    const resets = logs.lines.filter((l) => l.msg === 'shared state connection reset');
    expect(resets.length).toBeGreaterThanOrEqual(3);
  });

  it('frees a key whose claim reply was lost as soon as Redis answers again: its retry runs instead of 409 until the in-flight expiry', async () => {
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
    });
    open.push(proxy);
    const keyPrefix = uniquePrefix();
    open.push({ close: () => removeKeys(keyPrefix) });
    const state = await testRedisState({
      url: proxy.urlFor(REDIS_URL),
      keyPrefix,
      commandTimeoutMs: 300,
    });
    open.push(state);
    const redis = new Redis(REDIS_URL);
    open.push({ close: async () => void redis.disconnect() });

    const first: KeyRecord = { fingerprint: 'f', claimant: 'first' };
    proxy.dropDownstream(true);
    await expect(state.claims.claim('lost', first, 60_000)).rejects.toThrow(SharedStateUnavailable);
    // The claim reached Redis: the key holds it, pending, for the in-flight expiry (60 s here).
    expect(await redis.get(`${keyPrefix}lost`)).toBe(JSON.stringify(first));
    proxy.dropDownstream(false);

    const retry: KeyRecord = { fingerprint: 'f', claimant: 'retry' };
    await expect
      .poll(
        async () => {
          try {
            return await state.claims.claim('lost', retry, 60_000);
          } catch {
            return 'refused';
          }
        },
        {
          timeout: 15_000,
          interval: 100,
        },
      )
      .toBeUndefined();
    expect(await redis.get(`${keyPrefix}lost`)).toBe(JSON.stringify(retry));
  });
});
