/**
 * The embedded history's schema in SQLite: the PostgreSQL adapter's tables (postgres's
 * migrations), in SQLite's types. Times are milliseconds since the epoch (integers: compact, and
 * compared and ordered as numbers); JSON is text; a uuid column checks its shape, as PostgreSQL's
 * `uuid` type does. An event's message ids are also rows of `history_event_messages`, the index
 * that PostgreSQL's GIN index on the JSON gives (a record's events found by its message id).
 *
 * A migration is never edited once released: a change is a new one. `migrate` applies the missing
 * ones in one `BEGIN IMMEDIATE` transaction: processes opening the file at once (a `serve` and a
 * `run --once`) take SQLite's write lock in turn, and each version is applied once.
 */
import type { Database } from 'better-sqlite3';

interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const hex = (n: number) => '[0-9a-fA-F]'.repeat(n);
const uuid = (column: string) =>
  `constraint ${column}_is_a_uuid check (${column} glob '${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}')`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'batches, records, events and their message ids, attempts, endpoint state',
    sql: `
      create table history_batches (
        id text primary key ${uuid('id')},
        correlation_id text not null,
        business_id text not null,
        endpoint text,
        pipeline text,
        file_name text,
        kind text not null,
        record_count integer not null,
        outcome text not null,
        problem text,
        receipt text,
        at integer not null,
        check ((endpoint is null) <> (pipeline is null and file_name is null))
      );
      create index history_batches_correlation on history_batches (correlation_id);
      create index history_batches_business_at on history_batches (business_id, at);
      create index history_batches_at on history_batches (at);

      create table history_records (
        batch_id text not null,
        position integer not null,
        business_id text not null,
        reference text not null,
        message_id text not null ${uuid('message_id')},
        line integer,
        at integer not null,
        primary key (batch_id, position)
      ) without rowid;
      create index history_records_reference on history_records (reference, business_id);
      create index history_records_at on history_records (at);

      create table history_events (
        id text primary key,
        type text not null,
        business_id text not null,
        payload text not null,
        received_at integer not null,
        occurred_at integer,
        correlation_id text,
        message_ids text
      );
      create index history_events_business on history_events (business_id, received_at);
      create index history_events_received on history_events (received_at);

      create table history_event_messages (
        message_id text not null,
        event_id text not null,
        received_at integer not null,
        primary key (message_id, event_id)
      ) without rowid;
      create index history_event_messages_received on history_event_messages (received_at);

      create table history_attempts (
        id text primary key ${uuid('id')},
        event_id text not null,
        business_id text not null,
        endpoint text not null,
        at integer not null,
        end_as text not null,
        status integer,
        duration_ms integer not null,
        response_excerpt text,
        error text
      );
      create index history_attempts_event on history_attempts (event_id, at);
      create index history_attempts_endpoint on history_attempts (business_id, endpoint, at);
      create index history_attempts_at on history_attempts (at);

      create table history_endpoints (
        business_id text not null,
        endpoint text not null,
        enabled integer not null,
        disabled_by text,
        failing_since integer,
        circuit text not null,
        updated_at integer not null,
        primary key (business_id, endpoint)
      ) without rowid;
    `,
  },
  {
    version: 2,
    name: 'records: pruned through their batch, without an index of their own on time or a check of the message id',
    // Of a record row's 4.7 µs of CPU, the time index cost 1.3 and the check of the message id's
    // shape 0.9, on every record written. The id is the service's own (ingest/message-id.ts);
    // SQLite cannot drop a check, so the table is made again without it.
    sql: `
      create table history_records_2 (
        batch_id text not null,
        position integer not null,
        business_id text not null,
        reference text not null,
        message_id text not null,
        line integer,
        at integer not null,
        primary key (batch_id, position)
      ) without rowid;
      insert into history_records_2
        select batch_id, position, business_id, reference, message_id, line, at from history_records;
      drop table history_records;
      alter table history_records_2 rename to history_records;
      create index history_records_reference on history_records (reference, business_id);
    `,
  },
  {
    version: 3,
    name: "batches per business, day and outcome, kept by triggers (the portal's overview)",
    // Counting a month of batches per day read 100,000 rows (half a second at 100k batches); the
    // counts kept per day are a few hundred rows. A trigger keeps them with every batch written or
    // pruned, so no write path changes; a batch written again (on conflict do nothing) fires none.
    sql: `
      create table history_daily_batches (
        business_id text not null,
        day integer not null,
        outcome text not null,
        batches integer not null,
        records integer not null,
        primary key (business_id, day, outcome)
      ) without rowid;
      insert into history_daily_batches
        select business_id, at / 86400000, outcome, count(*), sum(record_count)
        from history_batches group by 1, 2, 3;
      create trigger history_batches_daily_in after insert on history_batches begin
        insert into history_daily_batches values
          (new.business_id, new.at / 86400000, new.outcome, 1, new.record_count)
        on conflict (business_id, day, outcome)
          do update set batches = batches + 1, records = records + excluded.records;
      end;
      create trigger history_batches_daily_out after delete on history_batches begin
        update history_daily_batches
          set batches = batches - 1, records = records - old.record_count
          where business_id = old.business_id and day = old.at / 86400000 and outcome = old.outcome;
        delete from history_daily_batches
          where business_id = old.business_id and day = old.at / 86400000
            and outcome = old.outcome and batches <= 0;
      end;
    `,
  },
];

/** Applies the migrations this file lacks; answers the versions it applied (none when current). */
export function migrate(db: Database): number[] {
  const apply = db.transaction(() => {
    db.exec(`create table if not exists history_migrations (
      version integer primary key,
      name text not null,
      applied_at integer not null
    )`);
    const done = new Set(
      db.prepare('select version from history_migrations').pluck().all() as number[],
    );
    const applied: number[] = [];
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('insert into history_migrations (version, name, applied_at) values (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
      applied.push(migration.version);
    }
    return applied;
  });
  return apply.immediate();
}
