/**
 * What the PostgreSQL history's SQL needs of a database: a query, and a transaction on one
 * connection. index.ts gives it on a node-postgres pool, with the transport's failures mapped to
 * `HistoryUnavailable` before they reach the SQL.
 */
export interface SqlQuery {
  query<Row extends object = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
  /** Runs a script of several statements, without parameters (a migration). */
  exec(script: string): Promise<void>;
}

export interface SqlClient extends SqlQuery {
  /**
   * Runs `work` in one transaction on one connection: committed when it resolves, rolled back
   * when it throws. `timeoutMs`: each statement's deadline instead of the client's (a migration
   * that builds an index on a large table).
   */
  transaction<T>(
    work: (tx: SqlQuery) => Promise<T>,
    options?: { readonly timeoutMs?: number },
  ): Promise<T>;
  close(): Promise<void>;
}
