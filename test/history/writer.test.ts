import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { HistoryUnavailable } from '../../src/operator-errors.js';
import { batchWrites } from '../../src/history/entries.js';
import { createHistoryMetrics } from '../../src/history/metrics.js';
import type { HistoryStore, HistoryWrites } from '../../src/history/store.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';

/** A store that keeps what it is given, and can be made unreachable. */
function fakeStore() {
  const written: HistoryWrites[] = [];
  const state = { down: false, opens: 0 };
  const store: HistoryStore = {
    name: 'fake',
    async open() {
      if (state.down) throw new HistoryUnavailable('down');
      state.opens++;
    },
    async write(writes) {
      if (state.down) throw new HistoryUnavailable('down');
      written.push(writes);
    },
    batches: async () => [],
    records: async () => [],
    listBatches: async () => ({ items: [] }),
    listEvents: async () => ({ items: [] }),
    event: async () => undefined,
    eventsAbout: async () => [],
    attempts: async () => [],
    undeliveredSince: async () => [],
    endpointStates: async () => [],
    endpointActivity: async () => [],
    dailyBatches: async () => [],
    endpointDeliveries: async () => [],
    batchRecords: async () => [],
    latestFailures: async () => ({ batches: [], attempts: [] }),
    prune: async () => ({ batches: 0, records: 0, events: 0, attempts: 0 }),
    close: async () => undefined,
  };
  const batchIds = () => written.flatMap((w) => w.batches ?? []).map((b) => b.correlationId);
  return { store, state, written, batchIds };
}

function accepted(correlationId: string, records = 1) {
  return batchWrites(
    {
      correlationId,
      businessId: 'ACME',
      source: { endpoint: '/api/v2/sales-orders' },
      kind: 'sales-orders',
      recordCount: records,
      outcome: 'accepted',
      at: new Date(),
    },
    [
      {
        first: 0,
        messageIds: Array.from({ length: records }, () => randomUUID()),
        references: Array.from({ length: records }, (_, i) => `SO-${i}`),
      },
    ],
  );
}

function setUp(maxPendingRows = 100) {
  const fake = fakeStore();
  const registry = new Registry();
  const metrics = createHistoryMetrics(registry);
  const lines: { level: number; msg: string }[] = [];
  const log = createLogger({
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const writer = createHistoryWriter({
    store: fake.store,
    log,
    metrics,
    maxPendingRows,
    flushMs: 5,
    retryDelayMs: [10, 20],
  });
  metrics.watch(writer);
  const value = async (name: string) =>
    (await registry.getSingleMetric(name)!.get()).values[0]?.value;
  return { ...fake, writer, registry, value, lines };
}

describe('history writer', () => {
  it('returns at once and writes what was added in one transaction after flushMs', async () => {
    const t = setUp();
    t.writer.add(accepted('a'));
    t.writer.add(accepted('b'));
    expect(t.written).toEqual([]);
    await vi.waitFor(() => expect(t.batchIds()).toEqual(['a', 'b']));
    expect(t.written).toHaveLength(1);
    expect(t.state.opens).toBe(1);
    await t.writer.close();
  });

  it('keeps rows while the store is away, counts them once, and writes them when it is back', async () => {
    const t = setUp();
    t.state.down = true;
    t.writer.add(accepted('a', 3)); // 1 batch + 3 records = 4 rows
    await vi.waitFor(() => expect(t.writer.reachable).toBe(false));
    t.writer.add(accepted('b', 1));
    await t.writer.flush();
    expect(await t.value('warehouse_ingest_history_deferred_rows_total')).toBe(6);
    expect(await t.value('warehouse_ingest_history_reachable')).toBe(0);
    expect(await t.value('warehouse_ingest_history_pending_rows')).toBe(6);
    t.state.down = false;
    await vi.waitFor(() => expect(t.batchIds()).toEqual(['a', 'b']));
    expect(t.writer.reachable).toBe(true);
    expect(await t.value('warehouse_ingest_history_deferred_rows_total')).toBe(6);
    expect(await t.value('warehouse_ingest_history_dropped_rows_total')).toBe(0);
    expect(await t.value('warehouse_ingest_history_pending_rows')).toBe(0);
    await t.writer.close();
  });

  it('logs one line per change of reachability, not one per failed write', async () => {
    const t = setUp();
    t.state.down = true;
    t.writer.add(accepted('a'));
    await vi.waitFor(() => expect(t.writer.reachable).toBe(false));
    for (let i = 0; i < 3; i++) await t.writer.flush();
    t.state.down = false;
    await vi.waitFor(() => expect(t.writer.reachable).toBe(true));
    const said = t.lines.map((l) => l.msg).filter((m) => m.startsWith('history'));
    expect(said).toEqual([
      expect.stringMatching(/^history unreachable/),
      expect.stringMatching(/^history reachable again/),
    ]);
    await t.writer.close();
  });

  it('drops the oldest rows past the bound, and counts them', async () => {
    const t = setUp(10);
    t.state.down = true;
    t.writer.add(accepted('old', 4)); // 5 rows
    t.writer.add(accepted('middle', 4)); // 10
    t.writer.add(accepted('new', 4)); // 15 > 10: 'old' goes
    expect(t.writer.pendingRows).toBe(10);
    expect(await t.value('warehouse_ingest_history_dropped_rows_total')).toBe(5);
    t.state.down = false;
    await t.writer.flush();
    await vi.waitFor(() => expect(t.batchIds()).toEqual(['middle', 'new']));
    await t.writer.close();
  });

  it('keeps the rows of a store that answers but cannot write (rights, its addon), says so, and writes them once it can', async () => {
    const t = setUp();
    const write = t.store.write;
    let broken = true;
    t.store.write = async (writes) => {
      if (broken) throw new Error('permission denied for table history_batches');
      return write(writes);
    };
    t.writer.add(accepted('kept', 1));
    await vi.waitFor(() => expect(t.writer.health).toBe('failing'));
    await t.writer.flush();
    expect(t.writer.pendingRows).toBe(2);
    expect(await t.value('warehouse_ingest_history_failing')).toBe(1);
    expect(await t.value('warehouse_ingest_history_reachable')).toBe(0);
    expect(await t.value('warehouse_ingest_history_dropped_rows_total')).toBe(0);
    expect(await t.value('warehouse_ingest_history_refused_rows_total')).toBe(0);
    expect(t.lines.filter((l) => l.msg.startsWith('history cannot write'))).toHaveLength(1);
    broken = false;
    await vi.waitFor(() => expect(t.batchIds()).toEqual(['kept']));
    expect(t.writer.health).toBe('ok');
    expect(await t.value('warehouse_ingest_history_failing')).toBe(0);
    await t.writer.close();
  });
});
