/**
 * The history's writer, off the request path: `add()` only queues (a `202` never waits on the
 * history), and one write at a time takes everything queued, after `flushMs`, in one
 * transaction — like the lineage journal's appends (lineage/journal.ts).
 *
 * The store may be away (PostgreSQL down or cut off, the embedded file locked by another
 * process's write for longer than SQLite waits): what could not be written stays queued and is written when it is back, tried again
 * on the one back-off formula. Each row that a write could not take is counted once
 * (`deferred`); past `maxPendingRows` the oldest queued writes are dropped and counted
 * (`dropped`): the history then misses them, never ingest or delivery. One log line per change
 * of reachability. A write refused for another reason (a bug: a constraint, a type) is logged
 * and dropped, never retried for ever. The store is opened (migrations) by the first write, so
 * `serve` never waits for the store at start-up.
 */
import { reconnectDelay } from '../backoff.js';
import { HistoryUnavailable } from '../operator-errors.js';
import type { Logger } from '../log.js';
import { type HistoryStore, type HistoryWrites, rowsOf } from './store.js';

export interface HistoryWriterMetrics {
  /** Rows a write could not take because the store was unreachable (each counted once; they wait). */
  deferred(rows: number): void;
  /** Rows the history will never have: dropped past the bound, or refused by the store. */
  dropped(rows: number): void;
}

export interface HistoryWriterOptions {
  readonly store: HistoryStore;
  readonly log: Logger;
  readonly metrics: HistoryWriterMetrics;
  /** Rows held at most; past it the oldest queued writes are dropped. */
  readonly maxPendingRows: number;
  /** How long rows are gathered before a write. */
  readonly flushMs: number;
  /**
   * Rows per transaction at most (a backlog after an outage is written in several).
   * @default 20000
   */
  readonly maxRowsPerWrite?: number;
  /**
   * First and longest wait before writing again while the store is away.
   * @default [500, 30000]
   */
  readonly retryDelayMs?: readonly [number, number];
}

export interface HistoryWriter {
  /** Queues rows and returns at once; never throws. */
  add(writes: HistoryWrites): void;
  /** Resolves once what is queued is written, or could not be (the store away: it stays queued). */
  flush(): Promise<void>;
  /** Rows queued now. */
  readonly pendingRows: number;
  /** Whether the last write reached the store (`undefined` before the first). */
  readonly reachable: boolean | undefined;
  /** A last flush, then no more writes; the store is closed by its owner. */
  close(): Promise<void>;
}

interface Queued {
  readonly writes: HistoryWrites;
  readonly rows: number;
  /** Already counted as deferred once. */
  deferred: boolean;
}

export function createHistoryWriter(options: HistoryWriterOptions): HistoryWriter {
  const { store, log, metrics, maxPendingRows, flushMs } = options;
  const maxRows = options.maxRowsPerWrite ?? 20_000;
  const [firstRetryMs, maxRetryMs] = options.retryDelayMs ?? [500, 30_000];
  const queue: Queued[] = [];
  let pendingRows = 0;
  let reachable: boolean | undefined;
  let opened = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let closed = false;

  const schedule = (ms: number) => {
    if (timer || writing || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      void start();
    }, ms);
    timer.unref();
  };

  const start = (): Promise<void> =>
    (writing ??= drain().finally(() => {
      writing = undefined;
      if (queue.length > 0 && reachable !== false) schedule(flushMs);
    }));

  function becomes(now: boolean, error?: unknown): void {
    if (reachable === now) return;
    const before = reachable;
    reachable = now;
    if (!now) {
      log.warn(
        { store: store.name, reason: (error as Error).message, pendingRows },
        'history unreachable: ingest and delivery go on; rows are kept (bounded) and written when it is back',
      );
    } else if (before === false) {
      log.info(
        { store: store.name, pendingRows },
        'history reachable again: writing what was kept',
      );
    }
  }

  /** Takes queued writes up to `maxRows` (at least one), merged into one transaction. */
  function take(): Queued[] {
    const taken: Queued[] = [];
    let rows = 0;
    while (queue.length > 0 && (taken.length === 0 || rows + queue[0]!.rows <= maxRows)) {
      const next = queue.shift()!;
      rows += next.rows;
      taken.push(next);
    }
    return taken;
  }

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const taken = take();
      try {
        if (!opened) {
          await store.open();
          opened = true;
        }
        await store.write(merge(taken.map((q) => q.writes)));
        for (const q of taken) pendingRows -= q.rows;
        failures = 0;
        becomes(true);
      } catch (error) {
        if (error instanceof HistoryUnavailable) {
          queue.unshift(...taken);
          const fresh = taken.filter((q) => !q.deferred);
          for (const q of fresh) q.deferred = true;
          metrics.deferred(fresh.reduce((sum, q) => sum + q.rows, 0));
          becomes(false, error);
          if (!closed) {
            const delay = reconnectDelay(failures++, firstRetryMs, maxRetryMs);
            setTimeout(() => schedule(0), delay).unref();
          }
          return;
        }
        const rows = taken.reduce((sum, q) => sum + q.rows, 0);
        pendingRows -= rows;
        metrics.dropped(rows);
        log.error(
          { err: error, store: store.name, rows },
          'history write refused: these rows are not kept',
        );
      }
    }
  }

  return {
    add(writes) {
      if (closed) return;
      const rows = rowsOf(writes);
      if (rows === 0) return;
      queue.push({ writes, rows, deferred: false });
      pendingRows += rows;
      let dropped = 0;
      while (pendingRows > maxPendingRows && queue.length > 0) {
        const oldest = queue.shift()!;
        pendingRows -= oldest.rows;
        dropped += oldest.rows;
      }
      if (dropped > 0) metrics.dropped(dropped);
      if (reachable !== false) schedule(flushMs);
    },
    async flush() {
      clearTimeout(timer);
      timer = undefined;
      await writing;
      if (queue.length > 0) await start();
    },
    get pendingRows() {
      return pendingRows;
    },
    get reachable() {
      return reachable;
    },
    async close() {
      clearTimeout(timer);
      timer = undefined;
      await writing;
      if (queue.length > 0) await start();
      closed = true;
    },
  };
}

function merge(all: readonly HistoryWrites[]): HistoryWrites {
  if (all.length === 1) return all[0]!;
  return {
    batches: all.flatMap((w) => w.batches ?? []),
    records: all.flatMap((w) => w.records ?? []),
    events: all.flatMap((w) => w.events ?? []),
    attempts: all.flatMap((w) => w.attempts ?? []),
    endpointStates: all.flatMap((w) => w.endpointStates ?? []),
  };
}
