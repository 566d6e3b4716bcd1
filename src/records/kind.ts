import type { z } from 'zod';

/** The five record kinds of spec §2.3–2.7; also the URL segment and the routing-key `{kind}`. */
export const KIND_NAMES = [
  'master-data',
  'sales-orders',
  'purchase-orders',
  'return-goods',
  'work-orders',
] as const;
export type KindName = (typeof KIND_NAMES)[number];

/**
 * Everything the pipeline needs to know about one record kind. Each kind is defined once,
 * in its own module, and shared by every source (HTTP v2/v1, file drops, reprocessing).
 */
export interface RecordKind<Schema extends z.ZodType = z.ZodType> {
  readonly name: KindName;
  /** Human wording for logs and docs, e.g. "sales order". */
  readonly label: string;
  /** The canonical v2 record. Unlisted fields pass through unchanged (loose objects). */
  readonly schema: Schema;
  /** Where the record's business id sits, for the tenancy check (spec §5.4). */
  readonly businessIdPath: readonly string[];
  /** The record's own number (order id, SKU, RGA id, work-order id), for lineage and logs. */
  readonly referencePath: readonly string[];
  /** Fields the platform sets: removed from the validated record, never forwarded. */
  readonly platformFields: ReadonlyArray<readonly string[]>;
}

/** A record's own number (`kind.referencePath`) as text; `''` when it has none (lineage, logs). */
export function referenceOf(kind: RecordKind, record: Record<string, unknown>): string {
  let value: unknown = record;
  for (const step of kind.referencePath) {
    if (typeof value !== 'object' || value === null) return '';
    value = (value as Record<string, unknown>)[step];
  }
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}
