import { describe, expect, it } from 'vitest';
import { HistoryUnavailable } from '../../src/operator-errors.js';
import { MIGRATIONS } from '../../src/history/postgres/migrations.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import { freshDatabase, onDatabase } from '../support/postgres.js';
import { describeHistoryStore } from './store-contract.js';

describeHistoryStore('PostgreSQL', async () => {
  const database = await freshDatabase('contract');
  return {
    store: () => createPostgresHistory({ url: database.url }),
    cleanup: async () => void (await database.drop()),
  };
});

describe('PostgreSQL history: a fleet', () => {
  it('is migrated once when several instances start at once', async () => {
    const database = await freshDatabase('race');
    const stores = Array.from({ length: 4 }, () => createPostgresHistory({ url: database.url }));
    try {
      await Promise.all(stores.map((store) => store.open()));
      const versions = await onDatabase(
        async (client) =>
          (await client.query('select version from history_migrations order by 1')).rows,
        database.url,
      );
      expect(versions).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await database.drop();
    }
  });

  it('has no column that could hold a key, a key hash, a secret or a password', async () => {
    const database = await freshDatabase('columns');
    const store = createPostgresHistory({ url: database.url });
    try {
      await store.open();
      const columns = await onDatabase(
        async (client) =>
          (
            await client.query<{ name: string }>(
              `select table_name || '.' || column_name as name from information_schema.columns
               where table_name like 'history\\_%' order by 1`,
            )
          ).rows.map((row) => row.name),
        database.url,
      );
      expect(columns.length).toBeGreaterThan(30);
      expect(
        columns.filter((name) => /key|secret|hash|password|token|signature/i.test(name)),
      ).toEqual([]);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  it('answers HistoryUnavailable when the server cannot be reached', async () => {
    const store = createPostgresHistory({
      url: 'postgres://postgres@127.0.0.1:1/none',
      connectTimeoutMs: 1000,
    });
    try {
      await expect(store.open()).rejects.toThrow(HistoryUnavailable);
      await expect(store.write({ batches: [] })).rejects.toThrow(HistoryUnavailable);
    } finally {
      await store.close();
    }
  });
});
