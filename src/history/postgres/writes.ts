/**
 * The PostgreSQL history's writes: column arrays through `unnest`, so a flush of thousands of
 * rows is a few statements, not one per row; a small flush is one statement of data-modifying
 * CTEs. Idempotent: every row has a key the writer made, and a row already there is left alone,
 * so a write repeated after a lost answer adds nothing.
 */
import {
  RESPONSE_EXCERPT_CHARS,
  type AttemptEntry,
  type BatchEntry,
  type EndpointStateEntry,
  type EventEntry,
  type HistoryWrites,
  type RecordEntries,
  rowsOf,
} from '../store.js';
import type { SqlClient, SqlQuery } from './client.js';
import {
  storableJson as json,
  storableOptional as optional,
  storableText as text,
} from '../storable.js';

/** Rows per insert statement: bounds the size of one statement's arrays for a file of a million records. */
const CHUNK = 5000;

/** One statement of a write: its SQL with parameters numbered from $1, and their values. */
interface Statement {
  readonly text: string;
  readonly params: readonly unknown[];
}

/** Each table's insert of a write, in the order they are written. */
function inserts(writes: HistoryWrites, size: number): Statement[] {
  const out: Statement[] = [];
  for (const part of chunks(writes.batches ?? [], size)) out.push(batchesStatement(part));
  for (const part of chunks(recordRows(writes.records ?? []), size))
    out.push(recordsStatement(part));
  for (const part of chunks(writes.events ?? [], size)) out.push(eventsStatement(part));
  for (const part of chunks(writes.attempts ?? [], size)) out.push(attemptsStatement(part));
  return out;
}

/**
 * A write in as few round trips as it can: up to `CHUNK` rows and no endpoint state (the HTTP
 * path's flush), its inserts go as one statement of data-modifying CTEs — atomic on its own, one
 * round trip instead of four (BEGIN, two inserts, COMMIT), which is most of what a flush of small
 * batches costs the service. Larger writes, and endpoint states, take a transaction.
 */
export async function write(db: SqlClient, writes: HistoryWrites): Promise<void> {
  const statements = inserts(writes, CHUNK);
  if (statements.length > 0 && rowsOf(writes) <= CHUNK && !writes.endpointStates?.length) {
    await db.query(...combined(statements));
    return;
  }
  await db.transaction(async (tx) => {
    for (const statement of inserts(writes, CHUNK))
      await tx.query(statement.text, statement.params);
    for (const state of writes.endpointStates ?? []) await upsertEndpoint(tx, state);
  });
}

/** Statements as CTEs of one: each one's `$n` shifted past the parameters before it. */
function combined(statements: readonly Statement[]): [string, unknown[]] {
  if (statements.length === 1) return [statements[0]!.text, [...statements[0]!.params]];
  const params: unknown[] = [];
  const parts = statements.map((statement, i) => {
    const offset = params.length;
    params.push(...statement.params);
    const text = statement.text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
    return `w${i} as (${text})`;
  });
  return [`with ${parts.join(',\n')}\nselect 1`, params];
}

function* chunks<T>(rows: readonly T[], size: number): Generator<readonly T[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

const column = <T, V>(rows: readonly T[], pick: (row: T) => V | undefined) =>
  rows.map((row) => pick(row) ?? null);

function batchesStatement(rows: readonly BatchEntry[]): Statement {
  const source = <K extends string>(row: BatchEntry, key: K) =>
    key in row.source ? (row.source as Record<K, string>)[key] : undefined;
  return {
    text: `insert into history_batches (id, correlation_id, business_id, endpoint, pipeline, file_name,
       kind, record_count, outcome, problem, receipt, at)
     select id, correlation_id, business_id, endpoint, pipeline, file_name, kind, record_count,
       outcome, problem::jsonb, receipt::jsonb, at
     from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
       $7::text[], $8::int[], $9::text[], $10::text[], $11::text[], $12::timestamptz[])
       as t(id, correlation_id, business_id, endpoint, pipeline, file_name, kind, record_count,
         outcome, problem, receipt, at)
     on conflict (id) do nothing`,
    params: [
      column(rows, (r) => r.id),
      column(rows, (r) => r.correlationId),
      column(rows, (r) => r.businessId),
      column(rows, (r) => source(r, 'endpoint')),
      column(rows, (r) => source(r, 'pipeline')),
      column(rows, (r) => optional(source(r, 'fileName'))),
      column(rows, (r) => r.kind),
      column(rows, (r) => r.recordCount),
      column(rows, (r) => r.outcome),
      column(rows, (r) => json(r.problem)),
      column(rows, (r) => json(r.receipt)),
      column(rows, (r) => r.at.toISOString()),
    ],
  };
}

interface RecordRowIn {
  readonly batchId: string;
  readonly position: number;
  readonly businessId: string;
  readonly reference: string;
  readonly messageId: string;
  readonly line: number | undefined;
  readonly at: string;
}

function recordRows(entries: readonly RecordEntries[]): RecordRowIn[] {
  const rows: RecordRowIn[] = [];
  for (const entry of entries) {
    const at = entry.at.toISOString();
    for (let i = 0; i < entry.messageIds.length; i++) {
      rows.push({
        batchId: entry.batchId,
        position: entry.first + i,
        businessId: entry.businessId,
        reference: text(entry.references[i] ?? ''),
        messageId: entry.messageIds[i]!,
        line: entry.lines?.[i],
        at,
      });
    }
  }
  return rows;
}

function recordsStatement(rows: readonly RecordRowIn[]): Statement {
  return {
    text: `insert into history_records (batch_id, position, business_id, reference, message_id, line, at)
     select * from unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::uuid[], $6::int[],
       $7::timestamptz[])
     on conflict (batch_id, position) do nothing`,
    params: [
      column(rows, (r) => r.batchId),
      column(rows, (r) => r.position),
      column(rows, (r) => r.businessId),
      column(rows, (r) => r.reference),
      column(rows, (r) => r.messageId),
      column(rows, (r) => r.line),
      column(rows, (r) => r.at),
    ],
  };
}

function eventsStatement(rows: readonly EventEntry[]): Statement {
  return {
    text: `insert into history_events (id, type, business_id, payload, received_at, occurred_at,
       correlation_id, message_ids)
     select id, type, business_id, payload::jsonb, received_at, occurred_at, correlation_id,
       message_ids::jsonb
     from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
       $6::timestamptz[], $7::text[], $8::text[])
       as t(id, type, business_id, payload, received_at, occurred_at, correlation_id, message_ids)
     on conflict (id) do nothing`,
    params: [
      column(rows, (r) => text(r.id)),
      column(rows, (r) => text(r.type)),
      column(rows, (r) => text(r.businessId)),
      column(rows, (r) => json(r.payload ?? null)),
      column(rows, (r) => r.receivedAt.toISOString()),
      column(rows, (r) => r.occurredAt?.toISOString()),
      column(rows, (r) => optional(r.correlationId)),
      column(rows, (r) => json(r.messageIds)),
    ],
  };
}

function attemptsStatement(rows: readonly AttemptEntry[]): Statement {
  return {
    text: `insert into history_attempts (id, event_id, business_id, endpoint, at, end_as, status,
       duration_ms, response_excerpt, error)
     select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
       $6::text[], $7::int[], $8::int[], $9::text[], $10::text[])
     on conflict (id) do nothing`,
    params: [
      column(rows, (r) => r.id),
      column(rows, (r) => text(r.eventId)),
      column(rows, (r) => text(r.businessId)),
      column(rows, (r) => r.endpoint),
      column(rows, (r) => r.at.toISOString()),
      column(rows, (r) => r.end),
      column(rows, (r) => r.status),
      column(rows, (r) => Math.round(r.durationMs)),
      column(rows, (r) => optional(r.responseExcerpt?.slice(0, RESPONSE_EXCERPT_CHARS))),
      column(rows, (r) => optional(r.error?.slice(0, RESPONSE_EXCERPT_CHARS))),
    ],
  };
}

/** The newest state wins: a state older than the one kept (a slow worker's) changes nothing. */
function upsertEndpoint(tx: SqlQuery, state: EndpointStateEntry) {
  return tx.query(
    `insert into history_endpoints as e (business_id, endpoint, enabled, disabled_by,
       failing_since, circuit, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7)
     on conflict (business_id, endpoint) do update set enabled = excluded.enabled,
       disabled_by = excluded.disabled_by, failing_since = excluded.failing_since,
       circuit = excluded.circuit, updated_at = excluded.updated_at
     where excluded.updated_at >= e.updated_at`,
    [
      state.businessId,
      state.endpoint,
      state.enabled,
      state.disabledBy ?? null,
      state.failingSince?.toISOString() ?? null,
      state.circuit,
      state.updatedAt.toISOString(),
    ],
  );
}
