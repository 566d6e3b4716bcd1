/**
 * The PostgreSQL history's aggregate reads for the portal's overview (../overview.ts): one
 * GROUP BY each, counted by the server; the days' counts are the ones the triggers of migration 4
 * keep. A day is `floor(epoch / 86400)`: the UTC day, the same number the embedded store computes
 * from its milliseconds.
 */
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
import type { HistoryStore } from '../store.js';
import type { SqlQuery } from './client.js';

type OverviewReads = Pick<
  HistoryStore,
  'dailyBatches' | 'endpointDeliveries' | 'batchRecords' | 'latestFailures'
>;

export function overviewReads(db: SqlQuery): OverviewReads {
  return {
    async dailyBatches(scope, window) {
      // The counts the triggers keep per day (migration 4): a few rows a day, whatever the volume.
      const rows = await db.query<DayOutcomeDbRow>(
        `select day, outcome, sum(batches)::int as batches, sum(records)::bigint as records
         from history_daily_batches
         where ($1::text is null or business_id = $1) and day >= $2 and day < $3
         group by day, outcome order by day, outcome`,
        [scoped(scope), dayNumber(window.since), dayNumber(window.until)],
      );
      return rows.map(toDayOutcome);
    },
    async endpointDeliveries(scope, window) {
      // Each event's latest attempt at each endpoint in the window says how it stands there.
      const rows = await db.query<DeliveriesDbRow>(
        `select business_id, endpoint, count(*)::int as attempts,
           count(*) filter (where end_as = 'delivered')::int as delivered_attempts,
           count(*) filter (where n = 1 and end_as = 'delivered')::int as delivered,
           count(*) filter (where n = 1 and end_as = 'failed')::int as retrying,
           count(*) filter (where n = 1 and end_as not in ('delivered', 'failed'))::int as dead
         from (select business_id, endpoint, end_as, row_number() over (
             partition by business_id, endpoint, event_id order by at desc, id desc) as n
           from history_attempts
           where ($1::text is null or business_id = $1) and at >= $2 and at < $3) latest
         group by business_id, endpoint order by business_id, endpoint`,
        [scoped(scope), window.since.toISOString(), window.until.toISOString()],
      );
      return rows.map(toDeliveries);
    },
    async batchRecords(scope, batchId, limit) {
      const rows = await db.query<BatchRecordDbRow>(
        `select position, reference, message_id::text as message_id, line from history_records
         where batch_id = $2 and ($1::text is null or business_id = $1)
         order by position limit $3`,
        [scoped(scope), batchId, limit],
      );
      return rows.map(toBatchRecord);
    },
    async latestFailures(scope, limit) {
      const [batches, attempts] = await Promise.all([
        db.query<BatchDbRow>(
          `select * from history_batches
           where ($1::text is null or business_id = $1) and outcome in (${REFUSED_SQL})
           order by at desc, id desc limit $2`,
          [scoped(scope), limit],
        ),
        db.query<AttemptDbRow>(
          `select * from history_attempts
           where ($1::text is null or business_id = $1) and end_as <> 'delivered'
           order by at desc, id desc limit $2`,
          [scoped(scope), limit],
        ),
      ]);
      return { batches: batches.map(toBatch), attempts: attempts.map(toAttempt) };
    },
  };
}
