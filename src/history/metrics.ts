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
    help: 'History rows never written because a bound was reached: the oldest past history.maxPendingRows in memory, the newest past the spool bound on disk, while the store was away or behind. Ingest and delivery are not affected.',
    registers,
  });
  const refused = new Counter({
    name: 'warehouse_ingest_history_refused_rows_total',
    help: 'History rows the store refused for their content (a constraint, text it cannot keep), each isolated from the rows written with it and logged with its business and correlation id.',
    registers,
  });
  new Gauge({
    name: 'warehouse_ingest_history_pending_rows',
    help: 'History rows waiting for a write, in memory and spooled to disk.',
    registers,
    collect() {
      this.set(writer?.pendingRows ?? 0);
    },
  });
  new Gauge({
    name: 'warehouse_ingest_history_spooled_rows',
    help: 'Of the pending history rows, those spooled to disk (under the history folder) while the store cannot take them.',
    registers,
    collect() {
      this.set(writer?.spooledRows ?? 0);
    },
  });
  new Gauge({
    name: 'warehouse_ingest_history_reachable',
    help: '1 when the last history write reached the store and wrote (or none was tried yet), 0 while writes fail (the store away, past its deadline, or unable to write).',
    registers,
    collect() {
      this.set(writer?.reachable === false ? 0 : 1);
    },
  });
  new Gauge({
    name: 'warehouse_ingest_history_failing',
    help: '1 while the history store answers but cannot write (rights, schema, its native addon): an operator must act; rows are kept meanwhile. 0 otherwise (an outage is history_reachable 0).',
    registers,
    collect() {
      this.set(writer?.health === 'failing' ? 1 : 0);
    },
  });
  deferred.inc(0);
  dropped.inc(0);
  refused.inc(0);
  return {
    deferred: (rows) => deferred.inc(rows),
    dropped: (rows) => dropped.inc(rows),
    refused: (rows) => refused.inc(rows),
    watch(next) {
      writer = next;
    },
  };
}
