/**
 * A batch's row as the database gives it, and the scope of a read as its first parameter: shared
 * by the queries that read batches (queries.ts, batch-pages.ts).
 */
import type { BatchEntry, Scope } from '../store.js';

/** `$1` of every read: the business id, or null for the operator's view. */
export const scoped = (scope: Scope) => ('businessId' in scope ? scope.businessId : null);

export interface BatchDbRow {
  id: string;
  correlation_id: string;
  business_id: string;
  endpoint: string | null;
  pipeline: string | null;
  file_name: string | null;
  kind: string;
  record_count: number;
  outcome: BatchEntry['outcome'];
  problem: unknown;
  receipt: unknown;
  at: Date;
  message_ids: string[];
}

export function toBatch(row: BatchDbRow): BatchEntry {
  return {
    id: row.id,
    correlationId: row.correlation_id,
    businessId: row.business_id,
    source:
      row.endpoint === null
        ? { pipeline: row.pipeline ?? '', fileName: row.file_name ?? '' }
        : { endpoint: row.endpoint },
    kind: row.kind,
    recordCount: row.record_count,
    outcome: row.outcome,
    ...(row.problem === null ? {} : { problem: row.problem }),
    ...(row.receipt === null ? {} : { receipt: row.receipt }),
    at: new Date(row.at),
  };
}
