import { createHash } from 'node:crypto';
import { WORK_FOLDER, type DropStore } from '../../../stores/store.js';
import { webhookBody, type WarehouseEvent } from '../../event.js';
import type { WriteOutcome } from '../../../vocabulary.js';

/**
 * Outbound files: each event for a pipeline's business written into the partner's own drop,
 * for a partner without an HTTP endpoint (docs/events.md "Outbound files"). The bytes and the
 * name depend on the event only, so a retry or a duplicate writes the same file under the same
 * name — and a name already there means the event was delivered (at-least-once, idempotent by
 * name).
 */

export type OutboundFormat = 'json' | 'csv' | 'x12';

/** The partner's and the warehouse's identifiers, from the pipeline's `events.x12` (x12.ts writes with them). */
export interface X12OutboundSpec {
  readonly sender: {
    readonly qualifier: string;
    readonly id: string;
    readonly groupId?: string | undefined;
  };
  readonly receiver: {
    readonly qualifier: string;
    readonly id: string;
    readonly groupId?: string | undefined;
  };
  readonly version: '004010' | '005010';
  readonly usage: 'P' | 'T';
  /** Folder where the partner leaves its 997s (`events x12-unacknowledged` reads them). */
  readonly acknowledgments?: string | undefined;
  readonly acknowledgeWithinMs: number;
}

export interface OutboundFilesSpec {
  /** Folder inside the drop, without a trailing `/`. */
  readonly path: string;
  readonly format: OutboundFormat;
  /** CSV only: data paths or `$id`, `$type`, `$occurredAt`, `$businessId`, `$correlationId`. */
  readonly columns?: readonly string[] | undefined;
  /** X12 only: the identifiers of the interchanges written (x12.ts). */
  readonly x12?: X12OutboundSpec | undefined;
}

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * `20261123T164901Z`: ISO 8601 basic format, which sorts as text in time order and has no `:`
 * (refused by Windows shares, and mangled in S3 copy sources by some servers).
 */
export function fileStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

/**
 * The event id as it may appear in a file name: kept when it is already safe, otherwise its safe
 * characters plus a hash of the whole id — two different ids never share a name, which would make
 * the second look delivered.
 */
export function fileSafeId(id: string): string {
  if (SAFE_ID.test(id) && id !== '.' && id !== '..') return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 16);
  return `${id.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 64)}~${hash}`;
}

/**
 * The type as it appears in a file name: a type longer than 100 characters keeps its first 80
 * and a hash of the whole, so every name stays under the 255 bytes file systems allow.
 */
function fileSafeType(type: string): string {
  if (type.length <= 100) return type;
  return `${type.slice(0, 80)}~${createHash('sha256').update(type).digest('hex').slice(0, 8)}`;
}

/** `<folder>/<occurredAt>-<type>-<id>.<json|csv>` — a partner sorting names sorts by time. */
export function outboundFileName(event: WarehouseEvent, spec: OutboundFilesSpec): string {
  return `${spec.path}/${fileStamp(event.occurredAt)}-${fileSafeType(event.type)}-${fileSafeId(event.id)}.${spec.format}`;
}

// A Map, not an object literal: a column named `constructor` is a data path, not a prototype member.
const EVENT_FIELDS = new Map<string, (event: WarehouseEvent) => unknown>([
  ['$id', (event) => event.id],
  ['$type', (event) => event.type],
  ['$occurredAt', (event) => event.occurredAt.toISOString()],
  ['$businessId', (event) => event.businessId],
  ['$correlationId', (event) => event.correlationId],
]);

/** The value at a dot-separated path of `data` (keys, or indexes into arrays); own keys only. */
export function valueAt(data: unknown, dotted: string): unknown {
  let value = data;
  for (const key of dotted.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** One RFC 4180 cell: quoted when it holds a comma, quote, CR or LF; objects as JSON text. */
export function csvCell(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The file's bytes: the webhook body plus `id` (JSON), or a header line and one row (CSV, CRLF). */
export function outboundFileContent(event: WarehouseEvent, spec: OutboundFilesSpec): string {
  if (spec.format === 'json')
    return `${JSON.stringify({ id: event.id, ...webhookBody(event) }, null, 2)}\n`;
  const columns = spec.columns ?? [];
  const row = columns.map((column) => {
    const field = EVENT_FIELDS.get(column);
    return csvCell(field ? field(event) : valueAt(event.data, column));
  });
  // One empty cell alone would be a blank line, which CSV readers skip: quote it.
  const line = row.length === 1 && row[0] === '' ? '""' : row.join(',');
  return `${columns.map(csvCell).join(',')}\r\n${line}\r\n`;
}

/** Where a write is staged before its rename: beside the drop's other work files, never listed as input. */
export const OUTBOUND_STAGING = `${WORK_FOLDER}/outbound`;

/** What `DropStore.write` names a file while writing it (local, SFTP): `<target>.<8 hex>.tmp`. */
const WRITING = /\.[0-9a-f]{8}\.tmp$/;

/**
 * A staged write this old is a dead worker's: one event's file takes milliseconds to write, and
 * an attempt gives up after `events.deliveryTimeoutMs` (seconds), so ten minutes leaves a wide
 * margin for a stalled store without letting leftovers pile up.
 */
export const STALE_STAGING_MS = 10 * 60_000;

/**
 * Removes what killed writers left in an outbound folder's staging area
 * (`.warehouse-ingest/outbound/<path>/`), once older than `olderThanMs`: the store's temporary
 * files of a staging write that never finished (`<name>.<8 hex>.tmp`, the worker's own
 * pattern — nothing else is in that folder), and staged files whose final name is there
 * already (another try delivered the event). A staged file whose final name is missing is left
 * for the event's redelivery to rename (that is its delivery). Only stores with rename stage;
 * returns the names removed.
 */
export async function sweepOutboundStaging(
  store: DropStore,
  spec: Pick<OutboundFilesSpec, 'path'>,
  olderThanMs = STALE_STAGING_MS,
  now = Date.now(),
): Promise<string[]> {
  if (!store.atomicRename) return [];
  const folder = `${OUTBOUND_STAGING}/${spec.path}`;
  const removed: string[] = [];
  for (const entry of await store.list(folder)) {
    if (now - entry.modifiedMs < olderThanMs) continue;
    const unfinished = WRITING.test(entry.name);
    // A whole staged file goes only when its event is delivered (the final name is there).
    if (!unfinished && !(await store.stat(entry.name.slice(OUTBOUND_STAGING.length + 1)))) continue;
    await store.remove(entry.name);
    removed.push(entry.name);
  }
  return removed;
}

/**
 * Writes one event's file, never overwriting: a name already there is delivered. With atomic
 * rename (local, SFTP) the file is staged under `.warehouse-ingest/outbound/` and renamed into
 * place (the rename refuses an existing target); S3 PUTs appear whole, so the file is put
 * directly after the check. The staging name is the final one, so a try interrupted after the
 * staging write is completed by the next try rather than leaving a second temporary file.
 */
export async function writeOutboundFile(
  store: DropStore,
  name: string,
  content: string,
): Promise<WriteOutcome> {
  if (await store.stat(name)) return 'existing';
  if (!store.atomicRename) {
    await store.write(name, content);
    return 'written';
  }
  const staged = `${OUTBOUND_STAGING}/${name}`;
  await store.write(staged, content);
  if (await store.rename(staged, name)) return 'written';
  // Lost a race with a duplicate of this event in another worker: the name is there, same bytes.
  if (await store.stat(name)) {
    await store.remove(staged);
    return 'existing';
  }
  throw new Error(`Could not rename the staged file into ${name}`);
}
