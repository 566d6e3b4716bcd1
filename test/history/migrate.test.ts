import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import { runCli } from '../support/cli-process.js';
import { freshDatabase, onDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/**
 * `warehouse-ingest migrate` (issue 38 item 11): an operator applies the migrations with a role
 * that may CREATE, and the service's own role, which may not, then opens the history and writes.
 */
const temp = tempFolder('history-migrate-');
const role = `ingest_app_${process.pid}_${randomBytes(3).toString('hex')}`;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let appUrl: string;

beforeAll(async () => {
  database = await freshDatabase('migrate');
  const name = new URL(database.url).pathname.slice(1);
  await onDatabase((c) => c.query(`create role ${role} login`));
  await onDatabase(async (c) => {
    await c.query('revoke create on schema public from public');
    await c.query(`grant usage on schema public to ${role}`);
    await c.query(`grant connect on database ${name} to ${role}`);
  }, database.url);
  const url = new URL(database.url);
  url.username = role;
  appUrl = url.toString();
});
afterAll(async () => {
  await database?.drop();
  await onDatabase((c) => c.query(`drop role if exists ${role}`));
});

const env = (url: string) => ({
  INGEST_ENV: 'development',
  INGEST_DATA_DIRECTORY: `${temp.dir}/data`,
  INGEST_PIPELINES_DIRECTORY: temp.dir,
  HISTORY_URL: url,
});

describe('warehouse-ingest migrate', () => {
  it("refuses, naming the store without credentials, when the role may not CREATE; an owner's run lets that role write", async () => {
    const refused = await runCli(['migrate'], { env: env(appUrl) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/could not be migrated: permission denied/);
    expect(refused.stderr).toContain(`127.0.0.1:5432${new URL(database.url).pathname}`);
    expect(refused.stderr).not.toContain(role);

    const done = await runCli(['migrate'], { env: env(database.url) });
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('history (postgres,');
    const again = await runCli(['migrate'], { env: env(database.url) });
    expect(again.code).toBe(0);

    await onDatabase(
      (c) =>
        c.query(`grant select, insert, update, delete on all tables in schema public to ${role}`),
      database.url,
    );
    // The service's role: the schema is current, so opening it creates nothing.
    const app = createPostgresHistory({ url: appUrl });
    try {
      await app.open();
      await app.write({
        batches: [
          {
            id: '01890000-0000-7000-8000-00000000abcd',
            correlationId: 'migrated',
            businessId: 'ACME',
            source: { endpoint: '/api/v2/sales-orders' },
            kind: 'sales-orders',
            recordCount: 0,
            outcome: 'rejected',
            at: new Date(),
          },
        ],
      });
      expect(await app.batches({ businessId: 'ACME' }, 'migrated')).toHaveLength(1);
    } finally {
      await app.close();
    }
  }, 120_000);
});
