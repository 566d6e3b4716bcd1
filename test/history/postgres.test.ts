import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { HistoryUnavailable } from '../../src/errors.js';
import { MIGRATIONS } from '../../src/history/sql/migrations.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import { describeHistoryStore } from './store-contract.js';

/**
 * The real PostgreSQL of the test machine (scripts/ensure-services.sh; trust auth), a database of
 * this file's own per run, created here and dropped after. Unreachable, the setup fails: no skip.
 */
const SERVER = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function freshDatabase(label: string) {
  const name = `history_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await onServer((c) => c.query(`create database ${name}`));
  return {
    url: `${SERVER}/${name}`,
    drop: () => onServer((c) => c.query(`drop database if exists ${name} with (force)`)),
  };
}

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
      const versions = await onServer(async () => {
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        try {
          return (await client.query('select version from history_migrations order by 1')).rows;
        } finally {
          await client.end();
        }
      });
      expect(versions).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
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
