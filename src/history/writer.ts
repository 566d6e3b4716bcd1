/**
 * The history's writer, off the request path: `add()` only queues (a `202` never waits on the
 * history), and one write at a time takes everything queued, after `flushMs`, in one
 * transaction — like the lineage journal's appends (lineage/journal.ts).
 *
 * A write ends one of three ways besides success, told apart by type where the store raised
 * them (docs/decisions.md#history-writes-a-refused-row-an-unreachable-store-a-failing-one):
 * - a row refused (`HistoryRowRefused`: NUL in a text, a constraint): the write is narrowed
 *   down to the refused rows (isolate.ts); only they are dropped, counted (`refused`) and logged
 *   with their business and correlation id, never their content;
 * - the store away (`HistoryUnavailable`: PostgreSQL down, cut off or past its deadline, the
 *   embedded file locked or full): `unreachable`;
 * - anything else (a role without rights, a native addon built for another Node line):
 *   `failing`, a store that answers but cannot write — an operator must act.
 * In both of the last two the rows are kept: with a spool (`serve`'s), everything queued goes to
 * disk and every row added meanwhile is appended there, so a kill loses nothing spooled and
 * memory stays bounded; without one, in memory up to `maxPendingRows` (the oldest dropped and
 * counted past it). Written again on the one back-off formula, the spool first. One log line per
 * change of state. The store is opened (migrations) by the first write, so `serve` never waits
 * for the store at start-up.
 */
import { reconnectDelay } from '../backoff.js';
import type { Logger } from '../log.js';
import { HistoryUnavailable } from '../operator-errors.js';
import { merge, writeIsolating } from './isolate.js';
import type { HistorySpool } from './spool.js';
import { type HistoryStore, type HistoryWrites, rowsOf } from './store.js';

export interface HistoryWriterMetrics {
  /** Rows a write could not take because the store was unreachable or failing (each counted once; they wait). */
  deferred(rows: number): void;
  /** Rows the history will never have: dropped past a bound. */
  dropped(rows: number): void;
  /** Rows the store refused for their content (each isolated from its neighbours). */
  refused?(rows: number): void;
}

/** How the last write went: written, the store away, or the store answering but unable to write. */
export type WriterHealth = 'ok' | 'unreachable' | 'failing';

export interface HistoryWriterOptions {
  readonly store: HistoryStore;
  readonly log: Logger;
  readonly metrics: HistoryWriterMetrics;
  /** Rows held in memory at most; past it the oldest queued writes are dropped. */
  readonly maxPendingRows: number;
  /** How long rows are gathered before a write. */
  readonly flushMs: number;
  /**
   * Where rows go while the store cannot take them (`serve`: under the history's folder). Without
   * one they wait in memory only, within `maxPendingRows`.
   */
  readonly spool?: HistorySpool;
  /**
   * Rows kept in the spool at most; past it the newest are dropped and counted.
   * @default 10 × maxPendingRows
   */
  readonly maxSpooledRows?: number;
  /**
   * Rows per transaction at most (a backlog after an outage is written in several).
   * @default 20000
   */
  readonly maxRowsPerWrite?: number;
  /**
   * First and longest wait before writing again while the store is away.
   * @default [500, 5000]: a retry costs one connection attempt, and the store is written again within seconds of its return
   */
  readonly retryDelayMs?: readonly [number, number];
}

export interface HistoryWriter {
  /** Queues rows and returns at once; never throws. */
  add(writes: HistoryWrites): void;
  /** Resolves once what is queued is written, or could not be (the store away: it stays queued). */
  flush(): Promise<void>;
  /** Rows waiting, in memory and in the spool. */
  readonly pendingRows: number;
  /** Of those, rows in the spool. */
  readonly spooledRows: number;
  /** Whether the last write reached the store and wrote (`undefined` before the first). */
  readonly reachable: boolean | undefined;
  /** How the last write went (`undefined` before the first). */
  readonly health: WriterHealth | undefined;
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
  const { store, log, metrics, maxPendingRows, flushMs, spool } = options;
  const maxRows = options.maxRowsPerWrite ?? 20_000;
  const maxSpooled = options.maxSpooledRows ?? 10 * maxPendingRows;
  const [firstRetryMs, maxRetryMs] = options.retryDelayMs ?? [500, 5000];
  const queue: Queued[] = [];
  let memoryRows = 0;
  let spooledRows = 0;
  /** While true, `add()` appends to the spool: the store failed and has not taken a write since. */
  let spooling = false;
  /** Appends to the spool, one after the other. */
  let appending: Promise<void> = Promise.resolve();
  /** The spool's files from an earlier process, counted once before the first write. */
  let spoolOpened = false;
  let health: WriterHealth | undefined;
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
      if ((queue.length > 0 || spooledRows > 0) && health === 'ok') schedule(flushMs);
    }));

  function becomes(now: WriterHealth, error?: unknown): void {
    if (health === now) return;
    const before = health;
    health = now;
    const pendingRows = memoryRows + spooledRows;
    if (now === 'unreachable') {
      log.warn(
        { store: store.name, reason: (error as Error).message, pendingRows },
        'history unreachable: ingest and delivery go on; rows are kept (bounded, spooled to disk) and written when it is back',
      );
    } else if (now === 'failing') {
      log.error(
        { store: store.name, reason: (error as Error).message, pendingRows },
        'history cannot write: the store answers but refuses every write (rights, schema, its native addon); rows are kept (bounded, spooled to disk) and written once it is fixed',
      );
    } else if (before !== undefined) {
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
    for (let next = queue[0]; next; next = queue[0]) {
      if (taken.length > 0 && rows + next.rows > maxRows) break;
      queue.shift();
      rows += next.rows;
      taken.push(next);
    }
    return taken;
  }

  /** Writes, isolating refused rows; counts and logs those. Throws when the store cannot write. */
  async function write(writes: HistoryWrites): Promise<void> {
    if (!opened) {
      await store.open();
      opened = true;
    }
    const refused = await writeIsolating(store, writes);
    for (const row of refused) {
      metrics.refused?.(row.rows);
      log.error(
        { store: store.name, ...row },
        'history row refused by the store: this row is not kept; the rows written with it are',
      );
    }
    failures = 0;
    spooling = false;
    becomes('ok');
  }

  async function drain(): Promise<void> {
    try {
      if (spool && !spoolOpened) {
        // A spool that cannot be read is the disk's problem, not the store's: logged, and the
        // store written to as usual.
        spooledRows += await spool.open().catch((error: unknown) => {
          log.warn(
            { reason: (error as Error).message },
            'history: the spool of an earlier process could not be read; its rows stay on disk',
          );
          return 0;
        });
        spoolOpened = true;
      }
      if (spool && spooledRows > 0) {
        await appending;
        await spool.replay(async (writes, rows) => {
          await write(merge(writes));
          spooledRows = Math.max(0, spooledRows - rows);
        }, maxRows);
      }
      while (queue.length > 0) {
        const taken = take();
        try {
          await write(merge(taken.map((q) => q.writes)));
        } catch (error) {
          queue.unshift(...taken);
          throw error;
        }
        for (const q of taken) memoryRows -= q.rows;
      }
    } catch (error) {
      await kept(error);
    }
  }

  /** The store could not write: the rows are kept (spooled when there is a spool), a retry scheduled. */
  async function kept(error: unknown): Promise<void> {
    const fresh = queue.filter((q) => !q.deferred);
    for (const q of fresh) q.deferred = true;
    metrics.deferred(fresh.reduce((sum, q) => sum + q.rows, 0));
    becomes(error instanceof HistoryUnavailable ? 'unreachable' : 'failing', error);
    if (spool) {
      spooling = true;
      const moved = queue.splice(0);
      const rows = moved.reduce((sum, q) => sum + q.rows, 0);
      memoryRows -= rows;
      spooledRows += rows;
      appending = appending.then(() =>
        spoolAppend(
          moved.map((q) => q.writes),
          rows,
        ),
      );
      await appending;
    }
    if (!closed) {
      const delay = reconnectDelay(failures++, firstRetryMs, maxRetryMs);
      setTimeout(() => schedule(0), delay).unref();
    }
  }

  /** Appends to the spool; a spool that cannot be written (a full disk) keeps them in memory instead. */
  async function spoolAppend(writes: HistoryWrites[], rows: number): Promise<void> {
    try {
      await spool?.append(writes);
    } catch (error) {
      spooledRows -= rows;
      log.warn(
        { reason: (error as Error).message, rows },
        'history: rows could not be spooled to disk; they wait in memory (bounded)',
      );
      for (const one of writes.reverse()) enqueue(one, rowsOf(one), true);
    }
  }

  function enqueue(writes: HistoryWrites, rows: number, front = false): void {
    const queued = { writes, rows, deferred: front };
    if (front) queue.unshift(queued);
    else queue.push(queued);
    memoryRows += rows;
    let dropped = 0;
    while (memoryRows > maxPendingRows) {
      const oldest = queue.shift();
      if (!oldest) break;
      memoryRows -= oldest.rows;
      dropped += oldest.rows;
    }
    if (dropped > 0) metrics.dropped(dropped);
  }

  // Rows an earlier process spooled (it was stopped or killed while the store was away) are
  // written without waiting for a new row to arrive.
  if (spool) schedule(flushMs);

  return {
    add(writes) {
      if (closed) return;
      const rows = rowsOf(writes);
      if (rows === 0) return;
      if (spooling && spool) {
        metrics.deferred(rows);
        if (spooledRows + rows > maxSpooled) {
          metrics.dropped(rows);
          return;
        }
        spooledRows += rows;
        appending = appending.then(() => spoolAppend([writes], rows));
        return;
      }
      enqueue(writes, rows);
      if (health !== 'unreachable' && health !== 'failing') schedule(flushMs);
    },
    async flush() {
      clearTimeout(timer);
      timer = undefined;
      await writing;
      if (queue.length > 0 || (spooledRows > 0 && health === 'ok')) await start();
      await appending;
    },
    get pendingRows() {
      return memoryRows + spooledRows;
    },
    get spooledRows() {
      return spooledRows;
    },
    get reachable() {
      return health === undefined ? undefined : health === 'ok';
    },
    get health() {
      return health;
    },
    async close() {
      clearTimeout(timer);
      timer = undefined;
      await writing;
      if (queue.length > 0) await start();
      await appending;
      closed = true;
    },
  };
}
