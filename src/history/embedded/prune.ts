/**
 * The embedded history's prune (issue 38, item 19): each table's rows past their cut-off,
 * deleted in transactions of `PRUNE_CHUNK` rows (records: those of `PRUNE_CHUNK` batches), so that
 * another process's write waits for one chunk, not the whole prune, and the WAL stays small.
 */
import type { Database, Statement } from 'better-sqlite3';
import { PRUNED_TABLES, type PrunedTable } from '../store.js';

/** Rows (or batches, for their records) one prune transaction deletes at most. */
const PRUNE_CHUNK = 5000;

const TIME_COLUMN: Record<Exclude<PrunedTable, 'records'>, string> = {
  batches: 'at',
  events: 'received_at',
  attempts: 'at',
};

export function pruneSqlite(
  db: Database,
  sql: (text: string) => Statement,
  olderThan: Readonly<Record<PrunedTable, Date>>,
): Record<PrunedTable, number> {
  const pruned = { batches: 0, records: 0, events: 0, attempts: 0 };
  const chunked = (run: () => number): number => {
    let total = 0;
    for (let n = PRUNE_CHUNK; n === PRUNE_CHUNK; total += n) n = db.transaction(run).immediate();
    return total;
  };
  // Records go with their batch, found by its time (records have no time index: it cost
  // every record written a quarter of its CPU), before any batch is deleted; they are
  // never kept longer than batches (history.retentionDays). The old batches are walked in
  // (at, id) order, a chunk of batches at a time.
  let after = { at: -Infinity, id: '' };
  for (;;) {
    const batches = sql(
      `select id, at from history_batches where at < @cut and (at > @at or (at = @at and id > @id))
       order by at, id limit ${PRUNE_CHUNK}`,
    ).all({ cut: olderThan.records.getTime(), ...after }) as { id: string; at: number }[];
    const last = batches.at(-1);
    if (!last) break;
    pruned.records += db
      .transaction(
        () =>
          sql('delete from history_records where batch_id in (select value from json_each(?))').run(
            JSON.stringify(batches.map((b) => b.id)),
          ).changes,
      )
      .immediate();
    after = { at: last.at, id: last.id };
  }
  for (const table of PRUNED_TABLES) {
    if (table === 'records') continue;
    const column = TIME_COLUMN[table];
    const cut = olderThan[table].getTime();
    pruned[table] = chunked(
      () =>
        sql(
          `delete from history_${table} where rowid in
             (select rowid from history_${table} where ${column} < ? limit ${PRUNE_CHUNK})`,
        ).run(cut).changes,
    );
    // An event's message ids go with it.
    if (table === 'events')
      chunked(
        () =>
          sql(
            `delete from history_event_messages where (message_id, event_id) in
               (select message_id, event_id from history_event_messages where received_at < ?
                limit ${PRUNE_CHUNK})`,
          ).run(cut).changes,
      );
  }
  return pruned;
}
