import { type SpawnOptions, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { HistoryUnavailable } from '../../src/operator-errors.js';
import { createEmbeddedHistory, HISTORY_FILE } from '../../src/history/embedded/index.js';
import { loadConfig } from '../../src/config.js';
import { MIGRATIONS } from '../../src/history/embedded/migrations.js';
import { batchWrites } from '../../src/history/entries.js';
import { openHistory } from '../../src/history/index.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { runCli } from '../support/cli-process.js';
import { tempFolder } from '../support/temp.js';
import { describeOverviewReads } from './overview-contract.js';
import { describeHistoryStore } from './store-contract.js';

const temp = tempFolder('history-embedded-');
const require = createRequire(import.meta.url);

/**
 * A node process of its own with the history's file open as `db`, running `script`: SQLite is
 * never loaded in the test's own thread (loaded there as well as in the store's worker threads,
 * the test's process crashed at exit on Node 24), and another process is what these tests mean.
 */
const sqliteProcess = (directory: string, script: string, options: SpawnOptions) =>
  spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(path.join(directory, HISTORY_FILE))});
       ${script}`,
    ],
    options,
  );

describeHistoryStore('embedded (SQLite)', async () => {
  const directory = path.join(temp.dir, 'contract');
  return {
    store: () => createEmbeddedHistory({ directory }),
    cleanup: async () => undefined,
  };
});

describe('the embedded history file', () => {
  it('is made readable and writable by its owner only (0600), its WAL too', async () => {
    const directory = path.join(temp.dir, 'mode');
    const store = createEmbeddedHistory({ directory });
    try {
      await store.open();
      await store.write(accepted(randomUUID()));
      const file = path.join(directory, HISTORY_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(`${file}-wal`).mode & 0o777).toBe(0o600);
    } finally {
      await store.close();
    }
  });
});

describeOverviewReads('embedded (SQLite)', async () => {
  const directory = path.join(temp.dir, 'overview');
  return {
    store: () => createEmbeddedHistory({ directory }),
    cleanup: async () => undefined,
  };
});

const accepted = (correlationId: string, reference = 'SO-CRASH') =>
  batchWrites(
    {
      correlationId,
      businessId: 'ACME',
      source: { endpoint: '/api/v2/sales-orders' },
      kind: 'sales-orders',
      recordCount: 1,
      outcome: 'accepted',
      at: new Date(),
    },
    [{ first: 0, messageIds: [randomUUID()], references: [reference] }],
  );

describe('embedded history: one file, several processes', () => {
  it('two stores on one file write at once and each reads what the other wrote', async () => {
    const directory = path.join(temp.dir, 'shared');
    const [one, two] = [createEmbeddedHistory({ directory }), createEmbeddedHistory({ directory })];
    await Promise.all([one.open(), two.open()]);
    try {
      const ids = Array.from({ length: 40 }, () => randomUUID());
      await Promise.all(
        ids.map((id, i) => (i % 2 ? one : two).write(accepted(id, `SO-SHARED-${i % 2}`))),
      );
      const [fromOne, fromTwo] = await Promise.all([
        one.records({ businessId: 'ACME' }, 'SO-SHARED-0'),
        two.records({ businessId: 'ACME' }, 'SO-SHARED-1'),
      ]);
      expect(fromOne).toHaveLength(20);
      expect(fromTwo).toHaveLength(20);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 60_000);

  it("answers HistoryUnavailable while another process holds the file's write lock, and writes once it is let go", async () => {
    const directory = path.join(temp.dir, 'locked');
    const store = createEmbeddedHistory({ directory });
    await store.open();
    // Another process's long write: SQLite's write lock, held past the store's 5 s wait.
    const other = sqliteProcess(
      directory,
      `db.exec('begin immediate'); process.stdout.write('locked\\n');
       process.stdin.on('end', () => { db.exec('rollback'); db.close(); });
       process.stdin.resume();`,
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const exited = once(other, 'exit');
    try {
      await once(other.stdout!, 'data');
      const correlationId = randomUUID();
      const write = store.write(accepted(correlationId, 'SO-LOCKED'));
      await expect(write).rejects.toThrow(HistoryUnavailable);
      await expect(write).rejects.toThrow(/cannot be used: database is locked/);
      other.stdin!.end();
      expect((await exited)[0]).toBe(0);
      await store.write(accepted(correlationId, 'SO-LOCKED'));
      expect(await store.records({ businessId: 'ACME' }, 'SO-LOCKED')).toHaveLength(1);
    } finally {
      other.kill();
      await store.close();
    }
  }, 60_000);

  it('is migrated by the next process when one is killed (kill -9) in the middle of its migration', async () => {
    const directory = path.join(temp.dir, 'killed-migrating');
    mkdirSync(directory);
    // The killed process has created the first version's tables in its open transaction (the
    // write lock held) when it is killed: SQLite ignores its uncommitted pages at the next open.
    const killed = sqliteProcess(
      directory,
      `db.pragma('journal_mode = WAL');
       db.exec('begin immediate');
       db.exec(process.env.FIRST);
       process.stdout.write('migrating\\n');
       setInterval(() => {}, 60000);`,
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, FIRST: MIGRATIONS[0]!.sql } },
    );
    const exited = once(killed, 'exit');
    const store = createEmbeddedHistory({ directory });
    try {
      await Promise.race([
        once(killed.stdout!, 'data'),
        exited.then(([code]) => {
          throw new Error(`the migrating process ended first (exit code ${code})`);
        }),
      ]);
      killed.kill('SIGKILL');
      await exited;
      await store.open();
      const correlationId = randomUUID();
      await store.write(accepted(correlationId, 'SO-AFTER-KILL'));
      expect(await store.records({ businessId: 'ACME' }, 'SO-AFTER-KILL')).toHaveLength(1);
    } finally {
      killed.kill('SIGKILL');
      await store.close();
    }
  }, 60_000);

  it('migrates a file of the first version with its rows: records are still found, and pruned with their batch', async () => {
    const directory = path.join(temp.dir, 'first-version');
    mkdirSync(directory);
    const batchId = '0190a3b2-0000-7000-8000-0000000000aa';
    const messageId = randomUUID();
    // The file as the first version left it, written by a process of its own (as everywhere in
    // this file, SQLite is not loaded in the test's own thread).
    const older = sqliteProcess(
      directory,
      `db.pragma('journal_mode = WAL');
       db.exec('create table history_migrations (version integer primary key, name text not null, applied_at integer not null)');
       db.exec(process.env.FIRST);
       db.prepare('insert into history_migrations values (1, ?, ?)').run('first', Date.now());
       db.prepare("insert into history_batches values (?, 'corr-first', 'ACME', '/api/v2/sales-orders', null, null, 'sales-orders', 1, 'accepted', null, null, ?)").run(process.env.BATCH, Date.parse('2026-11-20T00:00:00Z'));
       db.prepare("insert into history_records values (?, 0, 'ACME', 'SO-FIRST', ?, null, ?)").run(process.env.BATCH, process.env.MESSAGE, Date.parse('2026-11-20T00:00:00Z'));
       db.close();`,
      {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, FIRST: MIGRATIONS[0]!.sql, BATCH: batchId, MESSAGE: messageId },
      },
    );
    expect((await once(older, 'exit'))[0]).toBe(0);
    const store = createEmbeddedHistory({ directory });
    try {
      await store.open();
      const [found] = await store.records({ businessId: 'ACME' }, 'SO-FIRST');
      expect(found).toMatchObject({
        messageId,
        batch: { id: batchId, correlationId: 'corr-first' },
      });
      const cut = new Date('2026-11-21T00:00:00Z');
      const pruned = await store.prune({ batches: cut, records: cut, events: cut, attempts: cut });
      expect(pruned).toMatchObject({ batches: 1, records: 1 });
      expect(await store.records({ businessId: 'ACME' }, 'SO-FIRST')).toEqual([]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('answers HistoryUnavailable before it is open', async () => {
    const store = createEmbeddedHistory({ directory: path.join(temp.dir, 'never') });
    await expect(store.write({ batches: [] })).rejects.toThrow(HistoryUnavailable);
  });
});

describe('embedded history: its worker thread', () => {
  it('a worker that dies defers the writes; a new worker on the same folder writes them', async () => {
    const workers: Worker[] = [];
    let endNext = false;
    const store = createEmbeddedHistory({
      directory: path.join(temp.dir, 'crash'),
      onWorker: (worker) => {
        workers.push(worker);
        // The restarted worker dies at once too: its write is deferred, deterministically.
        if (endNext) {
          endNext = false;
          void worker.terminate();
        }
      },
    });
    const counted = { deferred: 0, dropped: 0 };
    const writer = createHistoryWriter({
      store,
      log: createLogger({ level: 'silent' }),
      metrics: {
        deferred: (rows) => (counted.deferred += rows),
        dropped: (rows) => (counted.dropped += rows),
      },
      maxPendingRows: 1000,
      flushMs: 10,
      retryDelayMs: [20, 50],
    });
    try {
      const [first, second] = [randomUUID(), randomUUID()];
      writer.add(accepted(first));
      await writer.flush();
      expect(writer.reachable).toBe(true);
      expect(workers).toHaveLength(1);

      endNext = true;
      await workers[0]!.terminate();
      writer.add(accepted(second));
      await writer.flush();
      expect(writer.reachable).toBe(false);
      expect(counted.deferred).toBe(2);

      await vi.waitFor(() => expect(writer.reachable).toBe(true), {
        timeout: 60_000,
        interval: 50,
      });
      expect(writer.pendingRows).toBe(0);
      expect(workers).toHaveLength(3);
      const found = await store.records({ businessId: 'ACME' }, 'SO-CRASH');
      expect(found.map((r) => r.batch.correlationId).sort()).toEqual([first, second].sort());
      expect(counted.dropped).toBe(0);
    } finally {
      await writer.close();
      await store.close();
    }
  }, 120_000);

  it('answers a failure of the store typed, and a closed store starts no worker', async () => {
    const workers: Worker[] = [];
    const store = createEmbeddedHistory({
      directory: path.join(temp.dir, 'typed'),
      onWorker: (worker) => workers.push(worker),
    });
    await store.open();
    // A constraint the database refuses is not an outage: a plain Error, not HistoryUnavailable.
    const refused = store.write({
      batches: [{ ...accepted('x').batches![0]!, id: 'not-a-uuid' }],
    });
    await expect(refused).rejects.toThrow(/uuid/);
    await expect(refused).rejects.not.toBeInstanceOf(HistoryUnavailable);
    await store.close();
    await expect(store.records({ operator: true }, 'SO-1')).rejects.toThrow(HistoryUnavailable);
    expect(workers).toHaveLength(1);
  }, 60_000);
});

describe('lineage on an embedded history', () => {
  const env = (dataDirectory: string) => ({
    INGEST_ENV: 'development',
    INGEST_DATA_DIRECTORY: dataDirectory,
    INGEST_HISTORY__ENABLED: 'true',
    INGEST_PIPELINES_DIRECTORY: path.join(temp.dir, 'no-pipelines'),
  });

  it('finds a batch in the file another process has open and writes to', async () => {
    const dataDirectory = path.join(temp.dir, 'served');
    const directory = path.join(dataDirectory, 'history');
    // As serve opens it (history/index.ts).
    const held = createEmbeddedHistory({ directory });
    await held.open();
    try {
      const correlationId = randomUUID();
      await held.write(accepted(correlationId, 'SO-HELD'));

      // Two commands at once, while this process keeps writing.
      const writing = held.write(accepted(randomUUID(), 'SO-OTHER'));
      const [first, second] = await Promise.all([
        runCli(['lineage', 'SO-HELD', '--json'], { env: env(dataDirectory) }),
        runCli(['lineage', 'SO-HELD', '--json'], { env: env(dataDirectory) }),
      ]);
      await writing;
      for (const result of [first, second]) {
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        expect(JSON.parse(result.stdout.split('\n')[0]!)).toMatchObject({
          source: 'history',
          reference: 'SO-HELD',
          correlationId,
        });
      }
      // The holder goes on writing and reading after the commands left.
      expect(await held.records({ businessId: 'ACME' }, 'SO-OTHER')).toHaveLength(1);
    } finally {
      await held.close();
    }
  }, 120_000);
});

describe('embedded history: a folder from the PGlite store of an earlier version', () => {
  it('says once that the old database is no longer read, and keeps its history in history.sqlite', async () => {
    const dataDirectory = path.join(temp.dir, 'from-pglite');
    mkdirSync(path.join(dataDirectory, 'history'), { recursive: true });
    writeFileSync(path.join(dataDirectory, 'history', 'PG_VERSION'), '17\n');
    const lines: string[] = [];
    const history = openHistory(
      {
        environment: 'development',
        dataDirectory,
        history: { ...loadConfig({ env: { INGEST_ENV: 'development' } }).history, enabled: true },
      },
      createLogger({ destination: { write: (line: string) => void lines.push(line) } }),
      new Registry(),
    );
    try {
      const warned = lines.filter((line) => line.includes('PGlite database of an earlier version'));
      expect(warned).toHaveLength(1);
      history!.writer.add(accepted(randomUUID(), 'SO-AFTER-PGLITE'));
      await history!.writer.flush();
      expect(existsSync(path.join(dataDirectory, 'history', HISTORY_FILE))).toBe(true);
      expect(await history!.store.records({ businessId: 'ACME' }, 'SO-AFTER-PGLITE')).toHaveLength(
        1,
      );
    } finally {
      await history!.close();
    }
  }, 60_000);
});

describe('the prune of a process that stops within the hour', () => {
  it('prunes as it closes (`run --once`, an instance restarted often): an old batch is gone, a new one kept', async () => {
    const dataDirectory = path.join(temp.dir, 'prune-on-close');
    const source = {
      environment: 'development',
      dataDirectory,
      history: { ...loadConfig({ env: { INGEST_ENV: 'development' } }).history, enabled: true },
    };
    const old = randomUUID();
    const recent = randomUUID();
    const first = openHistory(source, createLogger({ level: 'silent' }), new Registry());
    if (!first) throw new Error('the history is on');
    const at = new Date(Date.now() - (source.history.retentionDays.batches + 1) * 86_400_000);
    const oldBatch = accepted(old);
    first.writer.add({ ...oldBatch, batches: oldBatch.batches?.map((b) => ({ ...b, at })) });
    first.writer.add(accepted(recent));
    await first.close();
    const second = openHistory(source, createLogger({ level: 'silent' }), new Registry());
    try {
      expect(await second?.store.batches({ operator: true }, old)).toEqual([]);
      expect(await second?.store.batches({ operator: true }, recent)).toHaveLength(1);
    } finally {
      await second?.close();
    }
  });
});
