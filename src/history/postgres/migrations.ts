/**
 * The PostgreSQL history's schema as numbered migrations (the embedded store's, in SQLite's
 * types, is embedded/migrations.ts). A migration is never edited once released: a change is a
 * new one. `migrate` applies the missing ones in
 * one transaction that first takes an advisory lock, so instances starting at once wait for
 * each other and each version is applied once.
 */
import type { SqlClient } from './client.js';

interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The advisory lock key every instance takes while it migrates (`hashtext` of a fixed name). */
export const MIGRATION_LOCK = `select pg_advisory_xact_lock(hashtext('warehouse-ingest history migrations'))`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'batches, records, events, attempts, endpoint state',
    sql: `
      create table history_batches (
        id uuid primary key,
        correlation_id text not null,
        business_id text not null,
        endpoint text,
        pipeline text,
        file_name text,
        kind text not null,
        record_count integer not null,
        outcome text not null,
        problem jsonb,
        receipt jsonb,
        at timestamptz not null,
        check ((endpoint is null) <> (pipeline is null and file_name is null))
      );
      create index history_batches_correlation on history_batches (correlation_id);
      create index history_batches_business_at on history_batches (business_id, at);
      create index history_batches_at on history_batches (at);

      create table history_records (
        batch_id uuid not null,
        position integer not null,
        business_id text not null,
        reference text not null,
        message_id uuid not null,
        line integer,
        at timestamptz not null,
        primary key (batch_id, position)
      );
      create index history_records_reference on history_records (reference, business_id);
      create index history_records_at on history_records (at);

      create table history_events (
        id text primary key,
        type text not null,
        business_id text not null,
        payload jsonb not null,
        received_at timestamptz not null
      );
      create index history_events_business on history_events (business_id, received_at);
      create index history_events_received on history_events (received_at);

      create table history_attempts (
        id uuid primary key,
        event_id text not null,
        business_id text not null,
        endpoint text not null,
        at timestamptz not null,
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
        enabled boolean not null,
        disabled_by text,
        failing_since timestamptz,
        circuit text not null,
        updated_at timestamptz not null,
        primary key (business_id, endpoint)
      );
    `,
  },
  {
    version: 2,
    name: "events: occurrence time, correlation id and message ids (a resend's webhook body)",
    sql: `
      alter table history_events add column occurred_at timestamptz,
        add column correlation_id text, add column message_ids jsonb;
    `,
  },
  {
    version: 3,
    name: 'events: found by the message ids they answer (a record and its events)',
    sql: `
      create index history_events_message_ids on history_events using gin (message_ids);
    `,
  },
  {
    version: 4,
    name: "batches per business, day and outcome, kept by triggers (the portal's overview)",
    // As the embedded store's migration 3: the counts per UTC day kept by statement triggers
    // (one upsert per write, not per row), in a fixed order so that two instances' writes lock
    // the same rows in the same order. Rows a write skips (on conflict do nothing) are not in
    // its transition table.
    sql: `
      create table history_daily_batches (
        business_id text not null,
        day integer not null,
        outcome text not null,
        batches integer not null,
        records bigint not null,
        primary key (business_id, day, outcome)
      );
      insert into history_daily_batches
        select business_id, floor(extract(epoch from at) / 86400)::int, outcome, count(*),
          sum(record_count)
        from history_batches group by 1, 2, 3;
      create function history_daily_batches_in() returns trigger language plpgsql as $$
      begin
        insert into history_daily_batches (business_id, day, outcome, batches, records)
          select business_id, floor(extract(epoch from at) / 86400)::int, outcome, count(*),
            sum(record_count)
          from written group by 1, 2, 3 order by 1, 2, 3
        on conflict (business_id, day, outcome) do update
          set batches = history_daily_batches.batches + excluded.batches,
            records = history_daily_batches.records + excluded.records;
        return null;
      end $$;
      create function history_daily_batches_out() returns trigger language plpgsql as $$
      begin
        update history_daily_batches d
          set batches = d.batches - gone.batches, records = d.records - gone.records
          from (select business_id, floor(extract(epoch from at) / 86400)::int as day, outcome,
              count(*) as batches, sum(record_count) as records
            from deleted group by 1, 2, 3) gone
          where d.business_id = gone.business_id and d.day = gone.day
            and d.outcome = gone.outcome;
        delete from history_daily_batches where batches <= 0;
        return null;
      end $$;
      create trigger history_batches_daily_in after insert on history_batches
        referencing new table as written for each statement
        execute function history_daily_batches_in();
      create trigger history_batches_daily_out after delete on history_batches
        referencing old table as deleted for each statement
        execute function history_daily_batches_out();
    `,
  },
];

/**
 * Applies the migrations this database lacks; answers the versions it applied (none when current).
 * A current database is recognised by reads alone: a role without CREATE (the operator ran
 * `warehouse-ingest migrate` with one that has it) opens it, where `create table if not exists`
 * would be refused even for a table that exists.
 */
export async function migrate(db: SqlClient): Promise<number[]> {
  if (await isCurrent(db)) return [];
  // An index built on a large table may take minutes: the migration has a deadline of its own.
  return db.transaction(
    async (tx) => {
      await tx.query(MIGRATION_LOCK);
      await tx.query(`create table if not exists history_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`);
      const rows = await tx.query<{ version: number }>('select version from history_migrations');
      const done = new Set(rows.map((row) => row.version));
      const applied: number[] = [];
      for (const migration of MIGRATIONS) {
        if (done.has(migration.version)) continue;
        await tx.exec(migration.sql);
        await tx.query('insert into history_migrations (version, name) values ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
      }
      return applied;
    },
    { timeoutMs: MIGRATION_TIMEOUT_MS },
  );
}

async function isCurrent(db: SqlClient): Promise<boolean> {
  const [table] = await db.query<{ name: string | null }>(
    `select to_regclass('history_migrations')::text as name`,
  );
  if (!table?.name) return false;
  const rows = await db.query<{ version: number }>('select version from history_migrations');
  const done = new Set(rows.map((row) => row.version));
  return MIGRATIONS.every((migration) => done.has(migration.version));
}

/** Each migration statement's deadline (instead of the queries' few seconds). */
const MIGRATION_TIMEOUT_MS = 600_000;
