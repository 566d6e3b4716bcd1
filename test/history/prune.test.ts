import { describe, expect, it } from 'vitest';
import { pruneOnce } from '../../src/history/index.js';
import { historySchema } from '../../src/history/schema.js';
import type { HistoryStore, PrunedTable } from '../../src/history/store.js';
import type { HistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';

const DAY = 86_400_000;
const retentionDays = { batches: 30, records: 7, events: 90, attempts: 1 };
const history = {
  enabled: true,
  poolSize: 1,
  retentionDays,
  maxPendingRows: 1000,
  flushMs: 10,
};

function setUp(reachable: boolean | undefined) {
  const calls: Record<PrunedTable, Date>[] = [];
  const store = {
    prune: async (olderThan: Record<PrunedTable, Date>) => {
      calls.push(olderThan);
      return { batches: 0, records: 0, events: 0, attempts: 0 };
    },
  } as unknown as HistoryStore;
  const writer = { reachable } as HistoryWriter;
  return { calls, store, writer };
}

describe('the hourly prune', () => {
  it('cuts each table at its own retention', async () => {
    const { calls, store, writer } = setUp(true);
    const now = Date.parse('2026-11-26T12:00:00Z');
    await pruneOnce(store, writer, history, createLogger({ level: 'silent' }), now);
    expect(calls).toEqual([
      {
        batches: new Date(now - 30 * DAY),
        records: new Date(now - 7 * DAY),
        events: new Date(now - 90 * DAY),
        attempts: new Date(now - 1 * DAY),
      },
    ]);
  });

  it('waits until the writer has reached the store (it opens it, migrations first)', async () => {
    for (const reachable of [undefined, false]) {
      const { calls, store, writer } = setUp(reachable);
      await pruneOnce(store, writer, history, createLogger({ level: 'silent' }));
      expect(calls).toEqual([]);
    }
  });
});

describe('the retention the configuration takes', () => {
  const base = { ...history, retentionDays: { ...retentionDays } };
  it('keeps records no longer than their batches', () => {
    expect(historySchema.safeParse(base).success).toBe(true);
    const equal = { ...base, retentionDays: { ...retentionDays, records: 30 } };
    expect(historySchema.safeParse(equal).success).toBe(true);
    const longer = { ...base, retentionDays: { ...retentionDays, records: 31 } };
    const refused = historySchema.safeParse(longer);
    expect(refused.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['retentionDays.records', 'records are kept no longer than their batches: records ≤ batches'],
    ]);
  });
});
