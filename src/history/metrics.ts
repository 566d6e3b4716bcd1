import { Counter, Gauge, type Registry } from 'prom-client';
import type { HistoryWriter, HistoryWriterMetrics } from './writer.js';

export interface HistoryMetrics extends HistoryWriterMetrics {
  /** The pending rows and reachability gauges follow this writer (read at each scrape). */
  watch(writer: HistoryWriter): void;
}

/**
 * The history's series, on the app's registry, every one from 0 so that `increase(…) > 0` sees
 * the first row deferred or dropped. No label: the history is one store per instance.
 */
export function createHistoryMetrics(registry: Registry): HistoryMetrics {
  const registers = [registry];
  let writer: HistoryWriter | undefined;
  const deferred = new Counter({
    name: 'warehouse_ingest_history_deferred_rows_total',
    help: 'History rows a write could not take because the store was unreachable (each counted once): kept, bounded, and written when it is back.',
    registers,
  });
  const dropped = new Counter({
    name: 'warehouse_ingest_history_dropped_rows_total',
    help: 'History rows never written: the oldest dropped past history.maxPendingRows while the store was away or behind, or refused by the store. Ingest and delivery are not affected.',
    registers,
  });
  new Gauge({
    name: 'warehouse_ingest_history_pending_rows',
    help: 'History rows waiting in memory for a write.',
    registers,
    collect() {
      this.set(writer?.pendingRows ?? 0);
    },
  });
  new Gauge({
    name: 'warehouse_ingest_history_reachable',
    help: '1 when the last history write reached the store (or none was tried yet), 0 while it is unreachable.',
    registers,
    collect() {
      this.set(writer?.reachable === false ? 0 : 1);
    },
  });
  deferred.inc(0);
  dropped.inc(0);
  return {
    deferred: (rows) => deferred.inc(rows),
    dropped: (rows) => dropped.inc(rows),
    watch(next) {
      writer = next;
    },
  };
}
