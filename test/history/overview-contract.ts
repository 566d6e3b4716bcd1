import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptEntry, BatchEntry, HistoryStore } from '../../src/history/store.js';
import type { HistoryFixture } from './store-contract.js';

/**
 * The overview's aggregate reads, held to known counts on every store: a history of its own
 * (a fresh database, a fresh folder) written with a few batches and attempts inside a window and
 * just outside it, for two businesses.
 */
const at = (iso: string) => new Date(iso);
const WINDOW = { since: at('2021-03-01T00:00:00.000Z'), until: at('2021-03-04T00:00:00.000Z') };
const LAST_DAY = { since: at('2021-03-03T00:00:00.000Z'), until: WINDOW.until };

function batch(
  businessId: string,
  when: string,
  outcome: BatchEntry['outcome'],
  recordCount: number,
): BatchEntry {
  return {
    id: randomUUID(),
    correlationId: `ov-${businessId}-${when}`,
    businessId,
    source: { endpoint: '/api/v2/sales-orders' },
    kind: 'sales-orders',
    recordCount,
    outcome,
    ...(outcome === 'rejected' && { problem: { title: 'Validation failed', status: 400 } }),
    at: at(when),
  };
}

function attempt(
  businessId: string,
  endpoint: string,
  eventId: string,
  when: string,
  end: AttemptEntry['end'],
): AttemptEntry {
  return {
    id: randomUUID(),
    eventId,
    businessId,
    endpoint,
    at: at(when),
    end,
    ...(end === 'delivered' ? { status: 200 } : { status: 500 }),
    durationMs: 12,
  };
}

const BATCHES = [
  batch('OV-A', '2021-02-28T23:59:59.999Z', 'accepted', 100), // before the window
  batch('OV-A', '2021-03-01T00:00:00.000Z', 'accepted', 3),
  batch('OV-A', '2021-03-01T23:59:59.999Z', 'accepted', 4),
  batch('OV-A', '2021-03-01T12:00:00.000Z', 'rejected', 5),
  batch('OV-A', '2021-03-03T08:00:00.000Z', 'accepted', 10),
  batch('OV-A', '2021-03-03T09:00:00.000Z', 'duplicate', 2),
  batch('OV-A', '2021-03-03T12:00:00.000Z', 'unavailable', 1),
  batch('OV-A', '2021-03-04T00:00:00.000Z', 'accepted', 100), // at its end: after it
  batch('OV-B', '2021-03-02T06:00:00.000Z', 'rejected', 7),
];

const ATTEMPTS = [
  // erp: evt-1 delivered on its second try; evt-2 still failing; evt-3 gone; evt-4 before the
  // day; evt-5 failed the day before and delivered within it.
  attempt('OV-A', 'erp', 'evt-1', '2021-03-03T01:00:00.000Z', 'failed'),
  attempt('OV-A', 'erp', 'evt-1', '2021-03-03T02:00:00.000Z', 'delivered'),
  attempt('OV-A', 'erp', 'evt-2', '2021-03-03T01:00:00.000Z', 'failed'),
  attempt('OV-A', 'erp', 'evt-2', '2021-03-03T03:00:00.000Z', 'failed'),
  attempt('OV-A', 'erp', 'evt-3', '2021-03-03T04:00:00.000Z', 'gone'),
  attempt('OV-A', 'erp', 'evt-4', '2021-03-02T23:00:00.000Z', 'delivered'),
  attempt('OV-A', 'erp', 'evt-5', '2021-03-02T22:00:00.000Z', 'failed'),
  attempt('OV-A', 'erp', 'evt-5', '2021-03-03T05:00:00.000Z', 'delivered'),
  attempt('OV-A', 'https://hooks.example/x', 'evt-1', '2021-03-03T06:00:00.000Z', 'rejected'),
  attempt('OV-B', 'erp', 'evt-9', '2021-03-03T07:00:00.000Z', 'delivered'),
];

const MESSAGE_IDS = [randomUUID(), randomUUID(), randomUUID()];

const A_DAYS = [
  { day: '2021-03-01', outcome: 'accepted', batches: 2, records: 7 },
  { day: '2021-03-01', outcome: 'rejected', batches: 1, records: 5 },
  { day: '2021-03-03', outcome: 'accepted', batches: 1, records: 10 },
  { day: '2021-03-03', outcome: 'duplicate', batches: 1, records: 2 },
  { day: '2021-03-03', outcome: 'unavailable', batches: 1, records: 1 },
];

export function describeOverviewReads(name: string, makeFixture: () => Promise<HistoryFixture>) {
  describe(`HistoryStore overview reads: ${name}`, () => {
    let fixture: HistoryFixture;
    let store: HistoryStore;
    beforeAll(async () => {
      fixture = await makeFixture();
      store = fixture.store();
      await store.open();
      const carrier = BATCHES[1] as BatchEntry;
      await store.write({
        batches: BATCHES,
        attempts: ATTEMPTS,
        records: [
          {
            batchId: carrier.id,
            first: 0,
            businessId: 'OV-A',
            references: ['SO-1', '', 'SO-3'],
            messageIds: MESSAGE_IDS,
            lines: [2, undefined, 4],
            at: carrier.at,
          },
        ],
      });
    });
    afterAll(async () => {
      await store?.close();
      await fixture?.cleanup();
    });

    it('counts batches and records per UTC day and outcome, inside the window only, per scope', async () => {
      expect(await store.dailyBatches({ businessId: 'OV-A' }, WINDOW)).toEqual(A_DAYS);
      expect(await store.dailyBatches({ operator: true }, WINDOW)).toEqual([
        ...A_DAYS.slice(0, 2),
        { day: '2021-03-02', outcome: 'rejected', batches: 1, records: 7 },
        ...A_DAYS.slice(2),
      ]);
      expect(await store.dailyBatches({ businessId: 'OV-C' }, WINDOW)).toEqual([]);
      // Written again (a commit whose answer was lost): counted once.
      await store.write({ batches: BATCHES });
      expect(await store.dailyBatches({ businessId: 'OV-A' }, WINDOW)).toEqual(A_DAYS);
    });

    it("counts each endpoint's events by their latest attempt in the window, and its attempts", async () => {
      const erp = {
        businessId: 'OV-A',
        endpoint: 'erp',
        delivered: 2,
        retrying: 1,
        dead: 1,
        attempts: 6,
        deliveredAttempts: 2,
      };
      const hooks = {
        businessId: 'OV-A',
        endpoint: 'https://hooks.example/x',
        delivered: 0,
        retrying: 0,
        dead: 1,
        attempts: 1,
        deliveredAttempts: 0,
      };
      expect(await store.endpointDeliveries({ businessId: 'OV-A' }, LAST_DAY)).toEqual([
        erp,
        hooks,
      ]);
      expect(await store.endpointDeliveries({ operator: true }, LAST_DAY)).toEqual([
        erp,
        hooks,
        {
          ...hooks,
          businessId: 'OV-B',
          endpoint: 'erp',
          delivered: 1,
          dead: 0,
          deliveredAttempts: 1,
        },
      ]);
      expect(await store.endpointDeliveries({ businessId: 'OV-B' }, WINDOW)).toHaveLength(1);
    });

    it('lists the newest refused batches and undelivered attempts, per scope', async () => {
      const own = await store.latestFailures({ businessId: 'OV-A' }, 2);
      expect(own.batches.map((b) => [b.outcome, b.at.toISOString()])).toEqual([
        ['unavailable', '2021-03-03T12:00:00.000Z'],
        ['rejected', '2021-03-01T12:00:00.000Z'],
      ]);
      expect(own.batches[1]?.problem).toEqual({ title: 'Validation failed', status: 400 });
      expect(own.attempts.map((a) => [a.endpoint, a.end, a.eventId])).toEqual([
        ['https://hooks.example/x', 'rejected', 'evt-1'],
        ['erp', 'gone', 'evt-3'],
      ]);
      const all = await store.latestFailures({ operator: true }, 10);
      expect(all.batches.map((b) => b.businessId)).toEqual(['OV-A', 'OV-B', 'OV-A']);
      expect(all.attempts).toHaveLength(6);
      expect(await store.latestFailures({ businessId: 'OV-B' }, 10)).toMatchObject({
        attempts: [],
      });
    });

    it("lists a batch's records in batch order with their business keys, within its business", async () => {
      const id = (BATCHES[1] as BatchEntry).id;
      expect(await store.batchRecords({ businessId: 'OV-A' }, id, 10)).toEqual([
        { index: 0, reference: 'SO-1', messageId: MESSAGE_IDS[0], line: 2 },
        { index: 1, reference: '', messageId: MESSAGE_IDS[1] },
        { index: 2, reference: 'SO-3', messageId: MESSAGE_IDS[2], line: 4 },
      ]);
      expect(await store.batchRecords({ operator: true }, id, 2)).toHaveLength(2);
      expect(await store.batchRecords({ businessId: 'OV-B' }, id, 10)).toEqual([]);
    });

    it("counts a day's batches no more once they are pruned", async () => {
      const never = new Date(0);
      await store.prune({
        batches: at('2021-03-01T12:00:00.001Z'),
        records: never,
        events: never,
        attempts: never,
      });
      // 2021-03-01's first accepted batch (00:00) and its refusal (12:00) are gone; its last stays.
      expect(await store.dailyBatches({ businessId: 'OV-A' }, WINDOW)).toEqual([
        { day: '2021-03-01', outcome: 'accepted', batches: 1, records: 4 },
        ...A_DAYS.slice(2),
      ]);
    });
  });
}
