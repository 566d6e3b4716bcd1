/**
 * The embedded history's aggregate reads for the portal's overview (../overview.ts): counted by
 * SQLite in the worker thread, one GROUP BY each. A business's reads and the operator's are two
 * statements, so each uses the index that fits (`business_id, at` or `at`) instead of one plan
 * that must serve both.
 */
import type { Statement } from 'better-sqlite3';
import {
  type BatchRecordDbRow,
  dayNumber,
  type DayOutcomeDbRow,
  type DeliveriesDbRow,
  REFUSED_SQL,
  toBatchRecord,
  toDayOutcome,
  toDeliveries,
} from '../overview.js';
import { type AttemptDbRow, type BatchDbRow, scoped, toAttempt, toBatch } from '../rows.js';
import type { HistoryStore, Scope } from '../store.js';

type OverviewReads = Pick<
  HistoryStore,
  'dailyBatches' | 'endpointDeliveries' | 'batchRecords' | 'latestFailures'
>;

/** `where` for one business (`@business`) or, for the operator, every one. */
const whose = (scope: Scope, column = 'business_id') =>
  scoped(scope) === null ? '1 = 1' : `${column} = @business`;

export function overviewReads(sql: (text: string) => Statement): OverviewReads {
  return {
    async dailyBatches(scope, window) {
      // The counts the triggers keep per day (migration 3): a few rows a day, whatever the volume.
      const rows = sql(
        `select day, outcome, sum(batches) as batches, sum(records) as records
         from history_daily_batches
         where ${whose(scope)} and day >= @sinceDay and day < @untilDay
         group by day, outcome order by day, outcome`,
      ).all(days(scope, window)) as DayOutcomeDbRow[];
      return rows.map(toDayOutcome);
    },
    async endpointDeliveries(scope, window) {
      // Each event's latest attempt at each endpoint in the window says how it stands there.
      const rows = sql(
        `select business_id, endpoint, count(*) as attempts,
           sum(end_as = 'delivered') as delivered_attempts,
           sum(n = 1 and end_as = 'delivered') as delivered,
           sum(n = 1 and end_as = 'failed') as retrying,
           sum(n = 1 and end_as not in ('delivered', 'failed')) as dead
         from (select business_id, endpoint, end_as, row_number() over (
             partition by business_id, endpoint, event_id order by at desc, id desc) as n
           from history_attempts
           where ${whose(scope)} and at >= @since and at < @until)
         group by business_id, endpoint order by business_id, endpoint`,
      ).all(params(scope, window)) as DeliveriesDbRow[];
      return rows.map(toDeliveries);
    },
    async batchRecords(scope, batchId, limit) {
      const business = scoped(scope);
      const rows = sql(
        `select position, reference, message_id, line from history_records
         where batch_id = @batchId and ${whose(scope)} order by position limit @limit`,
      ).all(
        business === null ? { batchId, limit } : { batchId, limit, business },
      ) as BatchRecordDbRow[];
      return rows.map(toBatchRecord);
    },
    async latestFailures(scope, limit) {
      const business = scoped(scope);
      const named = business === null ? { limit } : { business, limit };
      const batches = sql(
        `select * from history_batches
         where ${whose(scope)} and outcome in (${REFUSED_SQL})
         order by at desc, id desc limit @limit`,
      ).all(named) as SqliteBatchRow[];
      const attempts = sql(
        `select * from history_attempts
         where ${whose(scope)} and end_as <> 'delivered'
         order by at desc, id desc limit @limit`,
      ).all(named) as SqliteAttemptRow[];
      return {
        batches: batches.map((row) =>
          toBatch({
            ...row,
            problem: parsed(row.problem),
            receipt: parsed(row.receipt),
            at: new Date(row.at),
            message_ids: [],
          }),
        ),
        attempts: attempts.map((row) => toAttempt({ ...row, at: new Date(row.at) })),
      };
    },
  };
}

/** The window as day numbers: the days that start within it. */
function days(scope: Scope, window: { readonly since: Date; readonly until: Date }) {
  const business = scoped(scope);
  const span = { sinceDay: dayNumber(window.since), untilDay: dayNumber(window.until) };
  return business === null ? span : { ...span, business };
}

/** better-sqlite3 refuses a named parameter the statement does not use. */
function params(scope: Scope, window: { readonly since: Date; readonly until: Date }) {
  const business = scoped(scope);
  const times = { since: window.since.getTime(), until: window.until.getTime() };
  return business === null ? times : { ...times, business };
}

const parsed = (text: string | null) => (text === null ? null : (JSON.parse(text) as unknown));

type SqliteBatchRow = Omit<BatchDbRow, 'at' | 'message_ids' | 'problem' | 'receipt'> & {
  at: number;
  problem: string | null;
  receipt: string | null;
};
type SqliteAttemptRow = Omit<AttemptDbRow, 'at'> & { at: number };
