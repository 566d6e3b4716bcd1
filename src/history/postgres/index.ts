/**
 * The history on PostgreSQL, for a fleet: every instance given the same `history.url` shares
 * one history (lineage, attempts, endpoint state). node-postgres with a pool; the transport's
 * failures (refused, reset, timed out, the server shutting down) are mapped once to
 * `HistoryUnavailable`, so the writer tells an outage from a bug by type. An idle connection's
 * error is listened for: unheard, it would end the process.
 */
import pg from 'pg';
import { HistoryUnavailable } from '../../operator-errors.js';
import type { SqlClient, SqlQuery } from './client.js';
import { createSqlHistory } from './queries.js';
import type { HistoryStore } from '../store.js';

export interface PostgresHistoryOptions {
  /** `postgres://user:password@host:port/database`; never logged with its password. */
  readonly url: string;
  /**
   * Connections in the pool.
   * @default 4
   */
  readonly poolSize?: number;
  /**
   * Longest wait for a connection (also a new one's handshake) before the write counts as unreachable.
   * @default 5000
   */
  readonly connectTimeoutMs?: number;
  /** Told of an idle connection's failure (logged by the caller). */
  readonly onIdleError?: (error: Error) => void;
}

/**
 * SQLSTATE classes of a lost or refused connection: 08 connection exception, 57 operator
 * intervention (shutdown); and 40, a transaction rolled back (deadlock, serialization failure):
 * two instances' writes meeting on the same day's counts (migration 4) may deadlock, and the same
 * write succeeds when tried again, as after an outage.
 */
const OUTAGE_CLASSES = ['08', '57', '40'];

export function isOutage(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  // A SQLSTATE is five characters; a socket's error (ECONNREFUSED …) or pg's own "Connection
  // terminated" has another code or none: every one of them is the transport's.
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    return OUTAGE_CLASSES.includes(code.slice(0, 2));
  }
  return error instanceof Error;
}

const mapped = (error: unknown): unknown =>
  isOutage(error)
    ? new HistoryUnavailable(
        `the PostgreSQL history cannot be reached: ${(error as Error).message}`,
        error,
      )
    : error;

export function createPostgresHistory(options: PostgresHistoryOptions): HistoryStore {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    application_name: 'warehouse-ingest history',
  });
  pool.on('error', (error) => options.onIdleError?.(error));
  const on = (q: pg.Pool | pg.PoolClient): SqlQuery => ({
    async query(text, params) {
      try {
        return (await q.query(text, params ? [...params] : undefined)).rows;
      } catch (error) {
        throw mapped(error);
      }
    },
    async exec(script) {
      try {
        await q.query(script);
      } catch (error) {
        throw mapped(error);
      }
    },
  });
  const client: SqlClient = {
    ...on(pool),
    async transaction(work) {
      let connection: pg.PoolClient;
      try {
        connection = await pool.connect();
      } catch (error) {
        throw mapped(error);
      }
      const tx = on(connection);
      let broken: unknown;
      try {
        await tx.exec('begin');
        const result = await work(tx);
        await tx.exec('commit');
        return result;
      } catch (error) {
        broken = error;
        await connection.query('rollback').catch(() => undefined);
        throw error;
      } finally {
        // A connection that failed mid-transaction is destroyed, never handed to the next write.
        connection.release(broken instanceof HistoryUnavailable ? (broken as Error) : undefined);
      }
    },
    close: () => pool.end(),
  };
  return createSqlHistory('postgres', client);
}
