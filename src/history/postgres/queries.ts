/**
 * The history store in PostgreSQL's SQL, on a `SqlClient` (index.ts gives a pool's): its reads,
 * the prune, and the writes of writes.ts. Every read is scoped: `$1` is the business id, or null
 * for the operator's view.
 */
import type { SqlClient } from './client.js';
import { listBatches } from './batch-pages.js';
import { listEvents } from './event-pages.js';
import { migrate } from './migrations.js';
import { overviewReads } from './overview.js';
import { write } from './writes.js';
import {
  activityPerEndpoint,
  type AttemptDbRow,
  type BatchDbRow,
  type EventDbRow,
  scoped,
  toAttempt,
  toBatch,
  toEvent,
} from '../rows.js';
import {
  PRUNED_TABLES,
  type EndpointStateEntry,
  type HistoryStore,
  type PrunedTable,
  type RecordRow,
} from '../store.js';

export function createSqlHistory(name: string, db: SqlClient): HistoryStore {
  return {
    name,
    async open() {
      await migrate(db);
    },
    write: (writes) => write(db, writes),
    async batches(scope, correlationId, options = {}) {
      const rows = await db.query<BatchDbRow>(
        `select b.*, coalesce((select array_agg(m.id order by m.position) from (
            select r.message_id::text as id, r.position from history_records r
            where r.batch_id = b.id order by r.position limit $3) m), '{}') as message_ids
         from history_batches b
         where b.correlation_id = $2 and ($1::text is null or b.business_id = $1)
         order by b.at, b.id`,
        [scoped(scope), correlationId, options.messageIds ?? null],
      );
      return rows.map((row) => ({ ...toBatch(row), messageIds: row.message_ids }));
    },
    async records(scope, reference, limit = 100) {
      const rows = await db.query<BatchDbRow & RecordDbRow>(
        `select b.*, r.reference, r.message_id::text as message_id, r.position, r.line
         from history_records r join history_batches b on b.id = r.batch_id
         where r.reference = $2 and ($1::text is null or r.business_id = $1)
         order by r.at desc, r.batch_id, r.position limit $3`,
        [scoped(scope), reference, limit],
      );
      return rows.map(
        (row): RecordRow => ({
          businessId: row.business_id,
          reference: row.reference,
          messageId: row.message_id,
          index: row.position,
          ...(row.line === null ? {} : { line: row.line }),
          batch: toBatch(row),
        }),
      );
    },
    listBatches: (scope, filter, page) => listBatches(db, scope, filter, page),
    listEvents: (scope, filter, page) => listEvents(db, scope, filter, page),
    async event(scope, id) {
      const [row] = await db.query<EventDbRow>(
        `select * from history_events where id = $2 and ($1::text is null or business_id = $1)`,
        [scoped(scope), id],
      );
      return row && toEvent(row);
    },
    async attempts(scope, eventId) {
      const rows = await db.query<AttemptDbRow>(
        `select * from history_attempts
         where event_id = $2 and ($1::text is null or business_id = $1) order by at, id`,
        [scoped(scope), eventId],
      );
      return rows.map(toAttempt);
    },
    async undeliveredSince(scope, endpoints, since) {
      const rows = await db.query<EventDbRow>(
        `select e.* from history_events e join (
           select event_id, business_id from history_attempts
           where endpoint = any($2::text[]) and at >= $3 and ($1::text is null or business_id = $1)
           group by event_id, business_id having bool_and(end_as <> 'delivered')
         ) failed on failed.event_id = e.id and failed.business_id = e.business_id
         order by coalesce(e.occurred_at, e.received_at), e.id`,
        [scoped(scope), [...endpoints], since.toISOString()],
      );
      return rows.map(toEvent);
    },
    async eventsAbout(scope, messageIds, number) {
      if (messageIds.length === 0 && !number) return [];
      // The newest 100, turned oldest first: the state is the latest event however many came.
      const rows = await db.query<EventDbRow>(
        `select * from (select * from history_events
           where ($1::text is null or business_id = $1)
             and (message_ids ?| $2::text[]
               or ($3::text is not null and starts_with(type, $3) and payload ->> $4::text = $5::text))
           order by coalesce(occurred_at, received_at) desc, id desc limit 100) newest
         order by coalesce(occurred_at, received_at), id`,
        [
          scoped(scope),
          [...messageIds],
          number?.typePrefix ?? null,
          number?.field ?? null,
          number?.value ?? null,
        ],
      );
      return rows.map(toEvent);
    },
    async endpointStates(scope) {
      const rows = await db.query<EndpointDbRow>(
        `select * from history_endpoints where ($1::text is null or business_id = $1)
         order by business_id, endpoint`,
        [scoped(scope)],
      );
      return rows.map(toEndpoint);
    },
    async endpointActivity(scope, last = 5) {
      const counts = await db.query<{
        business_id: string;
        endpoint: string;
        delivered: number;
        failed: number;
      }>(
        `select business_id, endpoint,
           count(*) filter (where end_as = 'delivered')::int as delivered,
           count(*) filter (where end_as <> 'delivered')::int as failed
         from history_attempts where ($1::text is null or business_id = $1)
         group by business_id, endpoint order by business_id, endpoint`,
        [scoped(scope)],
      );
      const recent = await db.query<AttemptDbRow>(
        `select * from (select a.*, row_number() over (partition by business_id, endpoint
             order by at desc, id) as n
           from history_attempts a where ($1::text is null or business_id = $1)) ranked
         where n <= $2 order by business_id, endpoint, at desc, id`,
        [scoped(scope), last],
      );
      return activityPerEndpoint(counts, recent.map(toAttempt));
    },
    ...overviewReads(db),
    async prune(olderThan) {
      // In statements of PRUNE_CHUNK rows, each its own transaction (issue 38, item 19): a
      // month of rows deleted at once held its locks and grew the WAL for as long as it ran, on
      // every instance at the same time.
      const pruned = {} as Record<PrunedTable, number>;
      for (const table of PRUNED_TABLES) {
        pruned[table] = 0;
        for (let n = PRUNE_CHUNK; n === PRUNE_CHUNK; ) {
          const [row] = await db.query<{ n: number }>(
            `with gone as (delete from history_${table} where ctid = any(array(
               select ctid from history_${table} where ${TIME_COLUMN[table]} < $1 limit $2))
             returning 1)
             select count(*)::int as n from gone`,
            [olderThan[table].toISOString(), PRUNE_CHUNK],
          );
          n = row?.n ?? 0;
          pruned[table] += n;
        }
      }
      return pruned;
    },
    close: () => db.close(),
  };
}

/** Rows one prune statement deletes at most. */
export const PRUNE_CHUNK = 5000;

const TIME_COLUMN: Record<PrunedTable, string> = {
  batches: 'at',
  records: 'at',
  events: 'received_at',
  attempts: 'at',
};

interface RecordDbRow {
  reference: string;
  message_id: string;
  position: number;
  line: number | null;
}

interface EndpointDbRow {
  business_id: string;
  endpoint: string;
  enabled: boolean;
  disabled_by: EndpointStateEntry['disabledBy'] | null;
  failing_since: Date | null;
  circuit: EndpointStateEntry['circuit'];
  updated_at: Date;
}

const toEndpoint = (row: EndpointDbRow): EndpointStateEntry => ({
  businessId: row.business_id,
  endpoint: row.endpoint,
  enabled: row.enabled,
  ...(row.disabled_by === null ? {} : { disabledBy: row.disabled_by }),
  ...(row.failing_since === null ? {} : { failingSince: new Date(row.failing_since) }),
  circuit: row.circuit,
  updatedAt: new Date(row.updated_at),
});
