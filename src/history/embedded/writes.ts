/**
 * The embedded history's writes: one transaction per write, each row through a statement
 * prepared once, so a flush of thousands of rows is thousands of bound executions in one commit
 * (SQLite has no round trip to save). Idempotent as the PostgreSQL adapter's: every row has a
 * key the writer made, and a row already there is left alone, so a write repeated after a lost
 * answer adds nothing.
 */
import type { Database, Statement } from 'better-sqlite3';
import {
  storableJson as json,
  storableOptional as optional,
  storableText as text,
} from '../storable.js';
import { RESPONSE_EXCERPT_CHARS, type EndpointStateEntry, type HistoryWrites } from '../store.js';

const ms = (date: Date | undefined) => (date === undefined ? null : date.getTime());

export type HistoryWrite = (writes: HistoryWrites) => void;

export function prepareWrite(db: Database): HistoryWrite {
  const batch = db.prepare(
    `insert into history_batches (id, correlation_id, business_id, endpoint, pipeline, file_name,
       kind, record_count, outcome, problem, receipt, at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
  );
  const record = db.prepare(
    `insert into history_records (batch_id, position, business_id, reference, message_id, line, at)
     values (?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
  );
  const event = db.prepare(
    `insert into history_events (id, type, business_id, payload, received_at, occurred_at,
       correlation_id, message_ids)
     values (?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
  );
  const eventMessage = db.prepare(
    `insert into history_event_messages (message_id, event_id, received_at) values (?, ?, ?)
     on conflict do nothing`,
  );
  const attempt = db.prepare(
    `insert into history_attempts (id, event_id, business_id, endpoint, at, end_as, status,
       duration_ms, response_excerpt, error)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
  );
  // The newest state wins: a state older than the one kept (a slow worker's) changes nothing.
  const endpoint = db.prepare(
    `insert into history_endpoints as e (business_id, endpoint, enabled, disabled_by,
       failing_since, circuit, updated_at)
     values (?, ?, ?, ?, ?, ?, ?)
     on conflict (business_id, endpoint) do update set enabled = excluded.enabled,
       disabled_by = excluded.disabled_by, failing_since = excluded.failing_since,
       circuit = excluded.circuit, updated_at = excluded.updated_at
     where excluded.updated_at >= e.updated_at`,
  );

  const write = db.transaction((writes: HistoryWrites) => {
    for (const row of writes.batches ?? []) {
      const source = row.source as { endpoint?: string; pipeline?: string; fileName?: string };
      batch.run(
        row.id,
        row.correlationId,
        row.businessId,
        source.endpoint ?? null,
        source.pipeline ?? null,
        optional(source.fileName) ?? null,
        row.kind,
        row.recordCount,
        row.outcome,
        json(row.problem),
        json(row.receipt),
        row.at.getTime(),
      );
    }
    for (const entry of writes.records ?? []) {
      const at = entry.at.getTime();
      for (let i = 0; i < entry.messageIds.length; i++)
        record.run(
          entry.batchId,
          entry.first + i,
          entry.businessId,
          text(entry.references[i] ?? ''),
          entry.messageIds[i],
          entry.lines?.[i] ?? null,
          at,
        );
    }
    for (const row of writes.events ?? []) {
      const receivedAt = row.receivedAt.getTime();
      const id = text(row.id);
      event.run(
        id,
        text(row.type),
        text(row.businessId),
        json(row.payload ?? null),
        receivedAt,
        ms(row.occurredAt),
        optional(row.correlationId) ?? null,
        json(row.messageIds),
      );
      for (const messageId of row.messageIds ?? [])
        eventMessage.run(text(messageId), id, receivedAt);
    }
    for (const row of writes.attempts ?? [])
      attempt.run(
        row.id,
        text(row.eventId),
        text(row.businessId),
        row.endpoint,
        row.at.getTime(),
        row.end,
        row.status ?? null,
        Math.round(row.durationMs),
        optional(row.responseExcerpt?.slice(0, RESPONSE_EXCERPT_CHARS)) ?? null,
        optional(row.error?.slice(0, RESPONSE_EXCERPT_CHARS)) ?? null,
      );
    for (const state of writes.endpointStates ?? []) upsert(endpoint, state);
  });
  // Immediate: the write lock is taken at BEGIN, so two processes writing one file wait for each
  // other (busy_timeout) instead of failing on a lock upgrade.
  return (writes) => write.immediate(writes);
}

function upsert(statement: Statement, state: EndpointStateEntry) {
  statement.run(
    state.businessId,
    state.endpoint,
    state.enabled ? 1 : 0,
    state.disabledBy ?? null,
    ms(state.failingSince),
    state.circuit,
    state.updatedAt.getTime(),
  );
}
