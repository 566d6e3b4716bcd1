/**
 * The history store on one SQLite file (better-sqlite3), opened by file.ts: the embedded
 * adapter's queries, the same answers as the PostgreSQL adapter's (one contract suite runs
 * against both). Calls are synchronous; the store runs in the embedded history's worker thread
 * (worker.ts), never on the thread that answers requests. Every read is scoped: `@business` is
 * the business id, or null for the operator's view. Rows are mapped, paged and grouped by the
 * functions both adapters share (../rows.ts) once their times and JSON are read back.
 */
import type { Database, Statement } from 'better-sqlite3';
import { HistoryUnavailable } from '../../operator-errors.js';
import {
  activityPerEndpoint,
  type AttemptDbRow,
  type BatchDbRow,
  batchPage,
  type EventDbRow,
  eventPage,
  scoped,
  toAttempt,
  toBatch,
  toEvent,
} from '../rows.js';
import {
  ATTEMPTS_PER_EVENT,
  type EndpointStateEntry,
  type HistoryStore,
  type RecordRow,
} from '../store.js';
import { migrate } from './migrations.js';
import { pruneSqlite } from './prune.js';
import { overviewReads } from './overview.js';
import { prepareWrite } from './writes.js';

/** Calls answer synchronously in substance; `HistoryStore`'s promises only wrap them. */
export function createSqliteHistory(db: Database): HistoryStore {
  const statements = new Map<string, Statement>();
  const sql = (text: string) => {
    let statement = statements.get(text);
    if (!statement) statements.set(text, (statement = db.prepare(text)));
    return statement;
  };
  let write: ReturnType<typeof prepareWrite> | undefined;
  const open = () => {
    migrate(db);
    write ??= prepareWrite(db);
  };

  return {
    name: 'embedded',
    async open() {
      open();
    },
    async write(writes) {
      if (!write) throw new HistoryUnavailable('the embedded history is not open');
      write(writes);
    },
    async batches(scope, correlationId, options = {}) {
      const rows = sql(
        `select b.*, (select json_group_array(m.message_id) from (
            select r.message_id from history_records r where r.batch_id = b.id
            order by r.position limit @limit) m) as message_ids
         from history_batches b
         where b.correlation_id = @correlationId and (@business is null or b.business_id = @business)
         order by b.at, b.id`,
      ).all({
        business: scoped(scope),
        correlationId,
        limit: options.messageIds ?? -1,
      }) as SqliteBatchRow[];
      return rows.map((row) => ({ ...batchOf(row), messageIds: JSON.parse(row.message_ids) }));
    },
    async records(scope, reference, limit = 100) {
      const rows = sql(
        `select b.*, r.reference, r.message_id as record_message_id, r.position, r.line
         from history_records r join history_batches b on b.id = r.batch_id
         where r.reference = @reference and (@business is null or r.business_id = @business)
         order by r.at desc, r.batch_id, r.position limit @limit`,
      ).all({ business: scoped(scope), reference, limit }) as (SqliteBatchRow & RecordDbRow)[];
      return rows.map(
        (row): RecordRow => ({
          businessId: row.business_id,
          reference: row.reference,
          messageId: row.record_message_id,
          index: row.position,
          ...(row.line === null ? {} : { line: row.line }),
          batch: batchOf(row),
        }),
      );
    },
    async listBatches(scope, filter, page) {
      const rows = sql(
        `select * from history_batches b
         where (@business is null or b.business_id = @business)
           and (@since is null or b.at >= @since)
           and (@until is null or b.at < @until)
           and (@outcome is null or b.outcome = @outcome)
           and (@kind is null or b.kind = @kind)
           and (@source is null or b.endpoint = @source or b.pipeline = @source)
           and (@afterAt is null or (b.at, b.id) < (@afterAt, @afterId))
         order by b.at desc, b.id desc
         limit @limit`,
      ).all({
        business: scoped(scope),
        since: ms(filter.since),
        until: ms(filter.until),
        outcome: filter.outcome ?? null,
        kind: filter.kind ?? null,
        source: filter.source ?? null,
        afterAt: ms(page.after?.at),
        afterId: page.after?.id ?? null,
        limit: page.limit + 1,
      }) as SqliteBatchRow[];
      return batchPage(rows.map(batchOf), page.limit);
    },
    async listEvents(scope, filter, page) {
      const business = scoped(scope);
      const rows = sql(
        `select * from history_events e
         where (@business is null or e.business_id = @business)
           and (@type is null or e.type = @type)
           and (@since is null or e.received_at >= @since)
           and (@until is null or e.received_at < @until)
           and (@afterAt is null or (e.received_at, e.id) < (@afterAt, @afterId))
         order by e.received_at desc, e.id desc
         limit @limit`,
      ).all({
        business,
        type: filter.type ?? null,
        since: ms(filter.since),
        until: ms(filter.until),
        afterAt: ms(page.after?.at),
        afterId: page.after?.id ?? null,
        limit: page.limit + 1,
      }) as SqliteEventRow[];
      const events = rows.map(eventOf);
      const attempts =
        events.length === 0
          ? []
          : (sql(
              `select * from (select a.*, row_number() over (partition by event_id order by at, id) as n
                 from history_attempts a
                 where a.event_id in (select value from json_each(@ids))
                   and (@business is null or a.business_id = @business)) ranked
               where n <= @per order by event_id, at, id`,
            ).all({
              business,
              ids: JSON.stringify(events.slice(0, page.limit).map((event) => event.id)),
              per: ATTEMPTS_PER_EVENT,
            }) as SqliteAttemptRow[]);
      return eventPage(events, page.limit, attempts.map(attemptOf));
    },
    async event(scope, id) {
      const row = sql(
        `select * from history_events where id = @id and (@business is null or business_id = @business)`,
      ).get({ business: scoped(scope), id }) as SqliteEventRow | undefined;
      return row && eventOf(row);
    },
    async attempts(scope, eventId) {
      const rows = sql(
        `select * from history_attempts
         where event_id = @eventId and (@business is null or business_id = @business)
         order by at, id`,
      ).all({ business: scoped(scope), eventId }) as SqliteAttemptRow[];
      return rows.map(attemptOf);
    },
    async undeliveredSince(scope, endpoints, since) {
      const rows = sql(
        `select e.* from history_events e join (
           select event_id, business_id from history_attempts
           where endpoint in (select value from json_each(@endpoints)) and at >= @since
             and (@business is null or business_id = @business)
           group by event_id, business_id having max(end_as = 'delivered') = 0
         ) failed on failed.event_id = e.id and failed.business_id = e.business_id
         order by coalesce(e.occurred_at, e.received_at), e.id`,
      ).all({
        business: scoped(scope),
        endpoints: JSON.stringify(endpoints),
        since: since.getTime(),
      }) as SqliteEventRow[];
      return rows.map(eventOf);
    },
    async eventsAbout(scope, messageIds, number) {
      if (messageIds.length === 0 && !number) return [];
      // The newest 100, turned oldest first: the state is the latest event however many came.
      const rows = sql(
        `select * from (select * from history_events
           where (@business is null or business_id = @business)
             and (id in (select event_id from history_event_messages
                   where message_id in (select value from json_each(@ids)))
               or (@prefix is not null and substr(type, 1, length(@prefix)) = @prefix
                   and json_extract(payload, @path) = @value))
           order by coalesce(occurred_at, received_at) desc, id desc limit 100)
         order by coalesce(occurred_at, received_at), id`,
      ).all({
        business: scoped(scope),
        ids: JSON.stringify(messageIds),
        prefix: number?.typePrefix ?? null,
        // A quoted key: a field name is never read as a path.
        path: number ? `$.${JSON.stringify(number.field)}` : null,
        value: number?.value ?? null,
      }) as SqliteEventRow[];
      return rows.map(eventOf);
    },
    async endpointStates(scope) {
      const rows = sql(
        `select * from history_endpoints where (@business is null or business_id = @business)
         order by business_id, endpoint`,
      ).all({ business: scoped(scope) }) as SqliteEndpointRow[];
      return rows.map(endpointOf);
    },
    async endpointActivity(scope, last = 5) {
      const business = scoped(scope);
      const counts = sql(
        `select business_id, endpoint,
           sum(end_as = 'delivered') as delivered, sum(end_as <> 'delivered') as failed
         from history_attempts where (@business is null or business_id = @business)
         group by business_id, endpoint order by business_id, endpoint`,
      ).all({ business }) as {
        business_id: string;
        endpoint: string;
        delivered: number;
        failed: number;
      }[];
      const recent = sql(
        `select * from (select a.*, row_number() over (partition by business_id, endpoint
             order by at desc, id) as n
           from history_attempts a where (@business is null or business_id = @business)) ranked
         where n <= @last order by business_id, endpoint, at desc, id`,
      ).all({ business, last }) as SqliteAttemptRow[];
      return activityPerEndpoint(counts, recent.map(attemptOf));
    },
    ...overviewReads(sql),
    async prune(olderThan) {
      return pruneSqlite(db, sql, olderThan);
    },
    async close() {
      write = undefined;
      statements.clear();
      db.close();
    },
  };
}

const ms = (date: Date | undefined) => (date === undefined ? null : date.getTime());
const parsed = (text: string | null) => (text === null ? null : (JSON.parse(text) as unknown));

/** Rows as SQLite gives them: times in milliseconds, JSON as text. */
type SqliteBatchRow = Omit<BatchDbRow, 'at' | 'message_ids'> & {
  at: number;
  problem: string | null;
  receipt: string | null;
  message_ids: string;
};
type SqliteEventRow = Omit<EventDbRow, 'received_at' | 'occurred_at' | 'message_ids'> & {
  received_at: number;
  occurred_at: number | null;
  payload: string;
  message_ids: string | null;
};
type SqliteAttemptRow = Omit<AttemptDbRow, 'at'> & { at: number };

interface RecordDbRow {
  reference: string;
  record_message_id: string;
  position: number;
  line: number | null;
}

interface SqliteEndpointRow {
  business_id: string;
  endpoint: string;
  enabled: number;
  disabled_by: EndpointStateEntry['disabledBy'] | null;
  failing_since: number | null;
  circuit: EndpointStateEntry['circuit'];
  updated_at: number;
}

const batchOf = (row: SqliteBatchRow) =>
  toBatch({
    ...row,
    problem: parsed(row.problem),
    receipt: parsed(row.receipt),
    at: new Date(row.at),
    message_ids: [],
  });

const eventOf = (row: SqliteEventRow) =>
  toEvent({
    ...row,
    payload: JSON.parse(row.payload),
    received_at: new Date(row.received_at),
    occurred_at: row.occurred_at === null ? null : new Date(row.occurred_at),
    message_ids: parsed(row.message_ids) as string[] | null,
  });

const attemptOf = (row: SqliteAttemptRow) => toAttempt({ ...row, at: new Date(row.at) });

const endpointOf = (row: SqliteEndpointRow): EndpointStateEntry => ({
  businessId: row.business_id,
  endpoint: row.endpoint,
  enabled: row.enabled === 1,
  ...(row.disabled_by === null ? {} : { disabledBy: row.disabled_by }),
  ...(row.failing_since === null ? {} : { failingSince: new Date(row.failing_since) }),
  circuit: row.circuit,
  updatedAt: new Date(row.updated_at),
});
