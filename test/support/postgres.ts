import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The real PostgreSQL of the test machine (scripts/ensure-services.sh; trust auth for
 * `postgres`). Each test file makes databases of its own and drops them: no shared state, and an
 * unreachable server fails the setup (no skip).
 */
export const POSTGRES = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** Runs `work` on one connection to `url` (the server's `postgres` database by default). */
export async function onDatabase<T>(
  work: (client: pg.Client) => Promise<T>,
  url = `${POSTGRES}/postgres`,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new empty database; `drop()` removes it even with connections still open. */
export async function freshDatabase(label: string) {
  const name = `history_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await onDatabase((c) => c.query(`create database ${name}`));
  return {
    url: `${POSTGRES}/${name}`,
    drop: () => onDatabase((c) => c.query(`drop database if exists ${name} with (force)`)),
  };
}
