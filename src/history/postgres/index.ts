/**
 * The history on PostgreSQL, for a fleet: every instance given the same `history.url` shares
 * one history (lineage, attempts, endpoint state). node-postgres with a pool; the transport's
 * failures (refused, reset, timed out, the server shutting down) are mapped once to
 * `HistoryUnavailable`, so the writer tells an outage from a bug by type. An idle connection's
 * error is listened for: unheard, it would end the process.
 *
 * Every query has a deadline (issue 38, item 4): the server's `statement_timeout`, and the
 * client's own a little later, for a network that stops answering without closing (a black hole:
 * no error ever comes). A query past it is `HistoryUnavailable`; its connection is destroyed, not
 * handed to the next query, so a read answers 503 and the writer keeps its rows and tries again
 * on a new connection. TCP keep-alive finds a dead idle connection.
 */
import pg from 'pg';
import { HistoryUnavailable } from '../../operator-errors.js';
import { HistoryRowRefused } from '../refused.js';
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
  /**
   * Longest a statement may run on the server (`statement_timeout`); the client gives up
   * `clientMarginMs` later (`query_timeout`) when no answer comes at all. A write is cut into
   * statements of 5,000 rows, each well under a second.
   * @default 5000
   */
  readonly statementTimeoutMs?: number;
  /**
   * How much longer the client waits than the server, so that a reachable server's own cancel
   * (a clean error, the connection kept) comes first.
   * @default 2000
   */
  readonly clientMarginMs?: number;
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

/** SQLSTATE classes of a row the server refuses: 22 data exception (NUL in text), 23 integrity constraint. */
const ROW_CLASSES = ['22', '23'];

/** A failure as the writer tells them apart: the store away, a row refused, or (as is) the store unable to write. */
const mapped = (error: unknown): unknown => {
  if (isOutage(error))
    return new HistoryUnavailable(
      `the PostgreSQL history cannot be reached: ${(error as Error).message}`,
      error,
    );
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && ROW_CLASSES.includes(code.slice(0, 2)))
    return new HistoryRowRefused(
      `the PostgreSQL history refused a row (${code}): ${(error as Error).message}`,
      error,
    );
  return error;
};

export function createPostgresHistory(options: PostgresHistoryOptions): HistoryStore {
  const statementTimeout = options.statementTimeoutMs ?? 5000;
  const queryTimeout = statementTimeout + (options.clientMarginMs ?? 2000);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    application_name: 'warehouse-ingest history',
    statement_timeout: statementTimeout,
    query_timeout: queryTimeout,
    keepAlive: true,
  });
  pool.on('error', (error) => options.onIdleError?.(error));
  // `pool.query` releases its connection with the error, which destroys it: a connection that
  // missed its deadline is never used again.
  const on = (q: pg.Pool | pg.PoolClient, timeoutMs = queryTimeout): SqlQuery => ({
    async query(text, params) {
      try {
        const values = params ? [...params] : undefined;
        return (await q.query({ text, values, query_timeout: timeoutMs } as pg.QueryConfig)).rows;
      } catch (error) {
        throw mapped(error);
      }
    },
    async exec(script) {
      try {
        await q.query({ text: script, query_timeout: timeoutMs } as pg.QueryConfig);
      } catch (error) {
        throw mapped(error);
      }
    },
  });
  const client: SqlClient = {
    ...on(pool),
    async transaction(work, transactionOptions = {}) {
      let connection: pg.PoolClient;
      try {
        connection = await pool.connect();
      } catch (error) {
        throw mapped(error);
      }
      const long = transactionOptions.timeoutMs;
      const tx = on(connection, long === undefined ? queryTimeout : long + queryTimeout);
      let broken: unknown;
      try {
        await tx.exec('begin');
        if (long !== undefined) await tx.exec(`set local statement_timeout = ${Math.round(long)}`);
        const result = await work(tx);
        await tx.exec('commit');
        return result;
      } catch (error) {
        broken = error;
        // A connection past its deadline is destroyed below; a rollback on it would wait again.
        if (!(error instanceof HistoryUnavailable))
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
