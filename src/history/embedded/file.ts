/**
 * The embedded history's file opened for the store of sqlite.ts, and the line between an outage
 * and a fault: SQLite's codes for a file that cannot be reached or written now become
 * `HistoryUnavailable` (the writer keeps its rows and tries again); any other failure (a
 * constraint, a bug) stays what it is, so its rows are dropped and logged, never retried for ever.
 */
import { closeSync, openSync } from 'node:fs';
import { HistoryUnavailable } from '../../operator-errors.js';
import { HistoryRowRefused } from '../refused.js';
import type { HistoryStore } from '../store.js';
import { createSqliteHistory } from './sqlite.js';

/** SQLite's result codes that say the file cannot be reached or written now, not that a row is wrong. */
const OUTAGE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|NOMEM|PROTOCOL)/;
/** The file system's codes, making the file, that say the same (a full disk, too many files open). */
const FILE_OUTAGE = ['ENOSPC', 'EMFILE', 'ENFILE', 'EIO', 'EBUSY'];
/** SQLite's result codes that say a row is wrong (a constraint, a type, a size): the writer isolates it. */
const ROW = /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/;

/**
 * The file opened for the history: WAL, so readers (a `lineage` in another process) never wait
 * for the writer and a write costs one append; `synchronous=NORMAL`, so a commit survives the
 * process being killed (only a power loss may take the last commits, which the history allows);
 * a writer waits up to 5 s for another process's write lock.
 */
export async function openSqliteHistory(file: string): Promise<HistoryStore> {
  const { default: Sqlite } = await import('better-sqlite3');
  // Made readable by the service's user only (issue 38, item 19): it holds every business's
  // batches and events. SQLite gives its -wal and -shm files the same mode. A file that exists
  // keeps the mode its operator gave it.
  outage(() => closeSync(openSync(file, 'a', 0o600)));
  const db = outage(() => new Sqlite(file, { timeout: 5000 }));
  outage(() => {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
  });
  const store = createSqliteHistory(db);
  return Object.fromEntries(
    Object.entries(store).map(([key, value]) => [
      key,
      typeof value === 'function'
        ? async (...args: unknown[]) => {
            try {
              return await (value as (...a: unknown[]) => Promise<unknown>)(...args);
            } catch (error) {
              throw mapped(error);
            }
          }
        : value,
    ]),
  ) as unknown as HistoryStore;
}

function outage<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw mapped(error);
  }
}

/** A failure as `HistoryUnavailable` when it is the file's, `HistoryRowRefused` when it is a row's. */
function mapped(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  if (OUTAGE.test(code) || FILE_OUTAGE.includes(code))
    return new HistoryUnavailable(
      `the embedded history's file cannot be used: ${(error as Error).message}`,
      error,
    );
  if (ROW.test(code))
    return new HistoryRowRefused(
      `the embedded history refused a row (${code}): ${(error as Error).message}`,
      error,
    );
  return error;
}
