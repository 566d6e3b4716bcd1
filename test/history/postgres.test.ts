import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { HistoryUnavailable } from '../../src/operator-errors.js';
import { MIGRATION_LOCK, MIGRATIONS } from '../../src/history/postgres/migrations.js';
import { createPostgresHistory, isOutage } from '../../src/history/postgres/index.js';
import { freshDatabase, onDatabase } from '../support/postgres.js';
import { describeOverviewReads } from './overview-contract.js';
import { describeHistoryStore } from './store-contract.js';

describeHistoryStore('PostgreSQL', async () => {
  const database = await freshDatabase('contract');
  return {
    store: () => createPostgresHistory({ url: database.url }),
    cleanup: async () => void (await database.drop()),
  };
});

describeOverviewReads('PostgreSQL', async () => {
  const database = await freshDatabase('overview');
  return {
    store: () => createPostgresHistory({ url: database.url }),
    cleanup: async () => void (await database.drop()),
  };
});

describe('PostgreSQL history: a fleet', () => {
  it('takes a transaction rolled back (a deadlock) as a write to try again, a constraint not', () => {
    expect(isOutage(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(true);
    expect(isOutage(Object.assign(new Error('could not serialize'), { code: '40001' }))).toBe(true);
    expect(isOutage(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
  });

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

  it('is migrated by the next instance when one is killed (kill -9) in the middle of its migration', async () => {
    const database = await freshDatabase('killed');
    // The killed instance: its migration's transaction holds the lock and has created the first
    // version's tables, uncommitted, when it is killed. A process of its own, as an instance is.
    const killed = spawn(
      process.execPath,
      [
        '-e',
        `const pg = require(${JSON.stringify(createRequire(import.meta.url).resolve('pg'))});
         const client = new pg.Client({ connectionString: process.env.URL });
         (async () => {
           await client.connect();
           await client.query('begin');
           await client.query(process.env.LOCK);
           await client.query(process.env.FIRST);
           process.stdout.write('migrating\\n');
         })();
         setInterval(() => {}, 60000);`,
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, URL: database.url, LOCK: MIGRATION_LOCK, FIRST: MIGRATIONS[0]!.sql },
      },
    );
    const exited = once(killed, 'exit');
    const store = createPostgresHistory({ url: database.url });
    try {
      await Promise.race([
        once(killed.stdout!, 'data'),
        exited.then(([code]) => {
          throw new Error(`the migrating process ended first (exit code ${code})`);
        }),
      ]);
      const opening = store.open();
      // The next instance waits on the killed one's lock, then goes on once the server has ended
      // the dead session and rolled its half-done migration back.
      await vi.waitFor(
        async () =>
          expect(
            await onDatabase(
              async (client) =>
                (
                  await client.query(
                    `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`,
                  )
                ).rows[0].n,
              database.url,
            ),
          ).toBe(1),
        { timeout: 10_000, interval: 50 },
      );
      killed.kill('SIGKILL');
      await exited;
      await opening;
      const versions = await onDatabase(
        async (client) =>
          (await client.query('select version from history_migrations order by 1')).rows,
        database.url,
      );
      expect(versions).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
      const at = new Date();
      await store.write({
        batches: [
          {
            id: '0190a3b2-0000-7000-8000-000000000001',
            correlationId: 'after-the-kill',
            businessId: 'ACME',
            source: { endpoint: '/api/v2/sales-orders' },
            kind: 'sales-orders',
            recordCount: 0,
            outcome: 'accepted',
            at,
          },
        ],
      });
      expect(await store.batches({ businessId: 'ACME' }, 'after-the-kill')).toHaveLength(1);
    } finally {
      killed.kill('SIGKILL');
      await store.close();
      await database.drop();
    }
  }, 60_000);

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
