import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Receipt } from '../../../src/drops/receipts.js';
import type { InputState } from '../../../src/drops/state/input-state.js';
import { readState, STATE_FOLDER } from '../../../src/drops/state/persist.js';
import type { DropStore } from '../../../src/stores/store.js';
import { AMQP_URL } from '../../support/broker.js';
import {
  demoOrdersCsv,
  shipmentIdOf,
  startDropHarness,
  type DropHarness,
} from '../../support/drop-harness.js';
import { auditQueue, drainQueue } from '../../support/queue-audit.js';
import { tapStore, type StoreTap } from '../../support/store-tap.js';
import { readAll } from '../../stores/store-contract.js';

/**
 * A real server behind a store, that the test can stop (the real process, killed) and start
 * again on the same port with the same data.
 */
export interface OutageFixture {
  readonly store: DropStore;
  put(name: string, content: string): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  cleanup(): Promise<void>;
}

const ORDERS = 20;
/** Fewer than the outages each case puts a file through: an outage that used an attempt would make it dead. */
const MAX_ATTEMPTS = 2;
const OUTAGES = 3;

/**
 * The store contract for outages: a store whose server goes away in the middle of a try maps that
 * to `DropUnavailable` at its boundary, so the try uses no attempt — however many outages in a
 * row — the file is tried again once the server is back, and every record is published under
 * one message id. Each store with a server of its own (SFTP, S3) runs it.
 */
export function describeStoreOutages(
  name: string,
  /** A pipeline name of its own (lower-case, dashes). */
  pipelineName: string,
  open: () => Promise<OutageFixture>,
): void {
  describe(`${name}: the server stops in the middle of a try`, () => {
    let fixture: OutageFixture;
    let tap: StoreTap;
    let harness: DropHarness;
    let serial = 0;

    beforeAll(async () => {
      fixture = await open();
      tap = tapStore(fixture.store);
      harness = await startDropHarness(tap.store, pipelineName, {
        retry: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: MAX_ATTEMPTS },
        // Far longer than any case waits: a claim a try cut by the outage could not give back is
        // given back by the worker at its next look once the server is back, never by the lease.
        claimLeaseMs: 600_000,
      });
    });
    afterAll(async () => {
      tap?.before(undefined);
      await harness?.close();
      await tap?.store.close();
      await fixture?.cleanup();
    });

    async function receiptOf(file: string, folder = 'processed'): Promise<Receipt | undefined> {
      const name = `${folder}/${file}.receipt.json`;
      if (!(await tap.store.stat(name))) return undefined;
      return JSON.parse((await readAll(await tap.store.read(name))).toString('utf8')) as Receipt;
    }

    /**
     * Puts a fresh file in the drop, then `OUTAGES` times: looks until the try reaches the write
     * `at` picks, where the server is stopped; then the server is started again.
     */
    async function outagesDuringTries(
      label: string,
      at: (key: string, stateWrites: number) => boolean,
      invalid = false,
    ): Promise<{ file: string; sha256: string }> {
      serial += 1;
      const file = `${label}-${serial}.csv`;
      const tag = `OUT-${pipelineName}-${label}-${serial}-${Date.now()}`;
      const content = invalid ? `not,a,legacy,file\n${tag},2,3,4\n` : demoOrdersCsv(tag, ORDERS);
      await fixture.put(file, content);
      for (let outage = 1; outage <= OUTAGES; outage++) {
        let stateWrites = 0;
        let stopped = false;
        tap.before(async (operation, key) => {
          if (operation !== 'write' || stopped) return;
          if (key.startsWith(`${STATE_FOLDER}/`) && key.endsWith('.json')) stateWrites += 1;
          if (!at(key, stateWrites)) return;
          stopped = true;
          await fixture.stop();
        });
        // Looks (waiting out the back-off, or a claim left behind) until the try met the outage.
        await vi.waitFor(
          async () => {
            await harness.runner.runOnce().catch(() => undefined);
            expect(stopped, `outage ${outage}: ${harness.warnings.slice(-2).join('')}`).toBe(true);
          },
          { timeout: 20_000, interval: 100 },
        );
        tap.before(undefined);
        await fixture.restart();
      }
      return { file, sha256: createHash('sha256').update(content).digest('hex') };
    }

    /** Looks until the file has its receipt (in `folder`); returns it with the input's state. */
    async function settledOnceBack(file: string, sha256: string, folder = 'processed') {
      await vi.waitFor(
        async () => {
          await harness.runner.runOnce().catch(() => undefined);
          expect(await receiptOf(file, folder), harness.warnings.slice(-2).join('')).toBeDefined();
        },
        { timeout: 30_000, interval: 100 },
      );
      const state = (await readState(tap.store, sha256)) as InputState;
      return { receipt: (await receiptOf(file, folder))!, state };
    }

    const kinds = (state: InputState) => (state.failures ?? []).map((f) => f.kind);

    it(`stopped before the try records "publishing", ${OUTAGES} times (retry.maxAttempts ${MAX_ATTEMPTS}): no attempt used, accepted once back, published once`, async () => {
      // The first state write of a try counts its attempt; the second says "publishing".
      const { file, sha256 } = await outagesDuringTries(
        'publishing',
        (_key, writes) => writes === 2,
      );
      expect(await harness.topology.count(), 'nothing published while the store was down').toBe(0);

      const { receipt, state } = await settledOnceBack(file, sha256);
      expect(receipt).toMatchObject({ outcome: 'accepted', attempt: 1 });
      expect(state).toMatchObject({ status: 'receipted', attempts: 1 });
      expect(kinds(state)).toEqual(Array(OUTAGES).fill('unavailable'));

      const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
      expect(audit.messages).toBe(ORDERS);
      expect(audit.distinctIds).toBe(ORDERS);
    }, 120_000);

    it(`stopped after the broker confirmed, before the ids are written, ${OUTAGES} times: no attempt used, every record under one id`, async () => {
      const { file, sha256 } = await outagesDuringTries('confirmed', (key) => key.endsWith('.ids'));

      const { receipt, state } = await settledOnceBack(file, sha256);
      expect(receipt).toMatchObject({ outcome: 'accepted', attempt: 1 });
      expect(state).toMatchObject({ status: 'receipted', attempts: 1 });
      expect(kinds(state)).toEqual(Array(OUTAGES).fill('unavailable'));

      // Each try published again under the same ids (the state could not say "published"): a
      // consumer de-duplicates by message id; none is lost and no record has two ids.
      const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
      expect(audit.distinctIds).toBe(ORDERS);
      expect(audit.recordsUnderSeveralIds).toEqual([]);
      expect(new Set((receipt.response as { messageIds: string[] }).messageIds)).toEqual(
        new Set(audit.bodyOf.keys()),
      );
    }, 120_000);

    it(`stopped while a rejected file is settled (its receipt), ${OUTAGES} times: settled again without a new attempt`, async () => {
      const { file, sha256 } = await outagesDuringTries(
        'rejected',
        (key) => key.endsWith('.receipt.json'),
        true,
      );
      const { receipt, state } = await settledOnceBack(file, sha256, 'failed');
      expect(receipt).toMatchObject({ outcome: 'rejected', attempt: 1 });
      expect(state).toMatchObject({ status: 'failed', attempts: 1 });
      expect(state.settling, 'the settle plan is cleared once carried out').toBeUndefined();
      // Each settle carried out again validated the file again: the same rejection, attempt 1.
      expect(new Set(state.failures?.map((f) => `${f.kind} ${f.attempt}`))).toEqual(
        new Set(['rejected 1']),
      );
      expect(await harness.topology.count(), 'nothing of a rejected file is published').toBe(0);
    }, 120_000);
  });
}
