import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { randomBytes, randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { createHistoryMetrics } from '../../src/history/metrics.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
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

  it('keeps the rows of a role that cannot write, says so (failing, not refused), and writes them once granted', async () => {
    const database = await freshDatabase('rights');
    const role = `history_ro_${randomBytes(4).toString('hex')}`;
    const owner = createPostgresHistory({ url: database.url });
    await owner.open();
    await onDatabase(async (c) => {
      await c.query(`create role ${role} login`);
      await c.query(`grant select on all tables in schema public to ${role}`);
    }, database.url);
    const url = new URL(database.url);
    url.username = role;
    const store = createPostgresHistory({ url: url.toString() });
    const registry = new Registry();
    const metrics = createHistoryMetrics(registry);
    const lines: Array<{ msg: string }> = [];
    const writer = createHistoryWriter({
      store,
      log: createLogger({ destination: { write: (l: string) => void lines.push(JSON.parse(l)) } }),
      metrics,
      maxPendingRows: 1000,
      flushMs: 5,
      retryDelayMs: [20, 50],
    });
    metrics.watch(writer);
    const value = async (name: string) =>
      (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
    try {
      const correlationId = randomUUID();
      writer.add({
        batches: [
          {
            id: randomUUID(),
            correlationId,
            businessId: 'ACME',
            source: { endpoint: '/api/v2/sales-orders' },
            kind: 'sales-orders',
            recordCount: 0,
            outcome: 'accepted',
            at: new Date(),
          },
        ],
      });
      await vi.waitFor(() => expect(writer.health).toBe('failing'), { timeout: 10_000 });
      expect(writer.pendingRows).toBe(1);
      expect(await value('warehouse_ingest_history_failing')).toBe(1);
      expect(await value('warehouse_ingest_history_reachable')).toBe(0);
      expect(await value('warehouse_ingest_history_refused_rows_total')).toBe(0);
      expect(await value('warehouse_ingest_history_dropped_rows_total')).toBe(0);
      expect(lines.filter((l) => l.msg.startsWith('history cannot write'))).toHaveLength(1);
      // The role as the issue found it: no CREATE (its migrations' `create table if not exists`)
      // and no INSERT. Granted what docs/history.md gives the service's role (a batch's write
      // also updates its day's count through a trigger), the kept row is written.
      await onDatabase(async (c) => {
        await c.query(`grant create on schema public to ${role}`);
        await c.query(`grant insert, update, delete on all tables in schema public to ${role}`);
      }, database.url);
      await vi.waitFor(
        async () => expect(await owner.batches({ operator: true }, correlationId)).toHaveLength(1),
        { timeout: 10_000 },
      );
      expect(writer.health).toBe('ok');
      expect(await value('warehouse_ingest_history_failing')).toBe(0);
    } finally {
      await writer.close();
      await store.close();
      await owner.close();
      await database.drop();
      await onDatabase((c) => c.query(`drop role if exists ${role}`)).catch(() => undefined);
    }
  });
});
