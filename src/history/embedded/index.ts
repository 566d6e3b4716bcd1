/**
 * The embedded history: PGlite (PostgreSQL compiled to WASM) in a folder under `dataDirectory`,
 * so `npm start` needs nothing installed and the SQL is the PostgreSQL adapter's own
 * (docs/decisions.md#the-history-store-pglite-embedded-postgresql-for-fleets).
 *
 * PGlite is not a server: one process at a time may hold its folder. A lock file beside it
 * (`<folder>.lock`, the holder's pid) makes a second instance on the same folder fail at once,
 * instead of two WASM databases writing the same files; a lock left by a dead process is taken
 * over. A fleet of instances shares PostgreSQL instead. The package loads with `open()`, so
 * commands that never open the history do not load it.
 */
import { mkdir, open as openFile, readFile, unlink } from 'node:fs/promises';
import { HistoryUnavailable } from '../../errors.js';
import type { SqlClient, SqlQuery } from '../sql/client.js';
import { createSqlHistory } from '../sql/queries.js';
import type { HistoryStore } from '../store.js';

export interface EmbeddedHistoryOptions {
  /** The database folder (made when missing); `<folder>.lock` is taken beside it. */
  readonly directory: string;
}

export function createEmbeddedHistory(options: EmbeddedHistoryOptions): HistoryStore {
  let client: SqlClient | undefined;
  const lockFile = `${options.directory}.lock`;
  const ready = (): SqlClient => {
    if (!client) throw new HistoryUnavailable('the embedded history is not open');
    return client;
  };
  const lazy: SqlClient = {
    query: async (text, params) => ready().query(text, params),
    exec: async (script) => ready().exec(script),
    transaction: async (work) => ready().transaction(work),
    async close() {
      const open = client;
      client = undefined;
      if (!open) return;
      await open.close();
      await unlink(lockFile).catch(() => undefined);
    },
  };
  const store = createSqlHistory('embedded', lazy);
  return {
    ...store,
    async open() {
      if (!client) {
        await mkdir(options.directory, { recursive: true });
        await takeLock(lockFile);
        try {
          client = await openPglite(options.directory);
        } catch (error) {
          await unlink(lockFile).catch(() => undefined);
          throw error;
        }
      }
      await store.open();
    },
  };
}

async function openPglite(directory: string): Promise<SqlClient> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(directory);
  const on = (q: Pick<typeof db, 'query' | 'exec'>): SqlQuery => ({
    query: async (text, params) =>
      (await q.query(text, params ? [...params] : undefined)).rows as never,
    exec: async (script) => void (await q.exec(script)),
  });
  return {
    ...on(db),
    transaction: (work) => db.transaction((tx) => work(on(tx))),
    close: () => db.close(),
  };
}

/** Takes `file` for this process, or refuses when a live process (this one included) holds it. */
async function takeLock(file: string): Promise<void> {
  for (let tries = 0; tries < 2; tries++) {
    try {
      const handle = await openFile(file, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
      throw new HistoryUnavailable(
        `the embedded history ${file.slice(0, -'.lock'.length)} is held by process ${holder}: one process at a time may open it (several instances share a PostgreSQL history instead, history.url)`,
      );
    }
    await unlink(file).catch(() => undefined); // a dead holder's
  }
  throw new HistoryUnavailable(`could not take the lock ${file}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
