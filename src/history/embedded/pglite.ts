/**
 * PGlite (PostgreSQL compiled to WASM) in a folder, as the shared SQL's client. It runs in the
 * embedded history's worker thread (worker.ts), never on the service's main thread; the folder's
 * lock is taken by the thread that owns the worker (index.ts). The package loads here, so
 * commands that never open the history do not load it.
 */
import type { PGlite } from '@electric-sql/pglite';
import type { SqlClient, SqlQuery } from '../sql/client.js';

export interface OpenedPglite {
  readonly db: PGlite;
  readonly client: SqlClient;
}

export async function openPglite(directory: string): Promise<OpenedPglite> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(directory);
  const on = (q: Pick<PGlite, 'query' | 'exec'>): SqlQuery => ({
    query: async (text, params) =>
      (await q.query(text, params ? [...params] : undefined)).rows as never,
    exec: async (script) => void (await q.exec(script)),
  });
  return {
    db,
    client: {
      ...on(db),
      transaction: (work) => db.transaction((tx) => work(on(tx))),
      close: () => db.close(),
    },
  };
}
