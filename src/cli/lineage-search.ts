/**
 * Finds where a record number came in: the HTTP journal's day files, and the lineage files in
 * each drop's state folder. Both are scanned line by line for the number before anything is
 * parsed, so a search costs a read of what is kept, never a parse of it.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { OpenedDrop } from '../drops/open.js';
import { RECEIPT_SUFFIX } from '../drops/receipts.js';
import type { InputState } from '../drops/state/input-state.js';
import { readState } from '../drops/state/persist.js';
import { WORK_FOLDER } from '../stores/store.js';
import { findInLineageFile, LINEAGE_SUFFIX } from '../lineage/drop-file.js';
import { entryPrefix, journalFiles, type JournalEntry } from '../lineage/journal-files.js';
import type { HistoryStore, Scope } from '../history/store.js';

export interface LineageQuery {
  /** The record's own number: order id, SKU, RGA id, work-order id. */
  readonly reference: string;
  readonly kind?: string;
  readonly businessId?: string;
  /** Only inputs processed at or after this time. */
  readonly since?: Date;
}

/** A record that came in through the HTTP API. */
export interface HttpMatch extends JournalEntry {
  readonly source: 'http';
}

/** A record that came in a dropped file: what the journal says of a record, and the file instead of the request. */
export interface FileMatch extends Omit<JournalEntry, 'endpoint' | 'correlationId' | 'at'> {
  /** The drop's store type: `local`, `sftp`, `s3`. */
  readonly source: string;
  readonly pipeline: string;
  /** The drop: `<type>:<where>`. */
  readonly drop: string;
  /** The name the file had when it was accepted, and its content hash. */
  readonly file: string;
  readonly sha256: string;
  /** The input's state: `receipted` once its receipt is written. */
  readonly status?: string;
  readonly processedAt?: string;
  /** The receipt's name in the drop. */
  readonly receipt?: string;
  /** Where the file is now in the drop (e.g. `processed/orders.csv`); absent when it is gone (deleted, moved away). */
  readonly location?: string;
}

/** A record as the history keeps it (every instance sharing the store): its batch, HTTP or a dropped file. */
export interface HistoryMatch {
  readonly source: 'history';
  readonly reference: string;
  readonly messageId: string;
  readonly index: number;
  readonly line?: number;
  readonly kind: string;
  readonly businessId: string;
  readonly correlationId: string;
  /** When the batch ended (ISO 8601, UTC). */
  readonly at: string;
  readonly outcome: string;
  /** The endpoint of an HTTP batch. */
  readonly endpoint?: string;
  /** The pipeline and file of a dropped one. */
  readonly pipeline?: string;
  readonly file?: string;
}

export type LineageMatch = HttpMatch | FileMatch | HistoryMatch;

/**
 * The history's records with this number, newest first: as the operator (every business) unless
 * the query names one. `pipeline` keeps only the files of that pipeline.
 */
export async function* searchHistory(
  store: HistoryStore,
  query: LineageQuery,
  pipeline?: string,
): AsyncGenerator<HistoryMatch> {
  const scope: Scope = query.businessId ? { businessId: query.businessId } : { operator: true };
  for (const row of await store.records(scope, query.reference)) {
    const { batch } = row;
    if (!matches(query, batch.kind, row.businessId)) continue;
    if (query.since && batch.at < query.since) continue;
    const file = 'pipeline' in batch.source ? batch.source : undefined;
    if (pipeline !== undefined && file?.pipeline !== pipeline) continue;
    yield {
      source: 'history',
      reference: row.reference,
      messageId: row.messageId,
      index: row.index,
      ...(row.line !== undefined && { line: row.line }),
      kind: batch.kind,
      businessId: row.businessId,
      correlationId: batch.correlationId,
      at: batch.at.toISOString(),
      outcome: batch.outcome,
      ...('endpoint' in batch.source
        ? { endpoint: batch.source.endpoint }
        : { pipeline: batch.source.pipeline, file: batch.source.fileName }),
    };
  }
}

/**
 * Entries of the HTTP journal earlier versions left in `directory` for the query, oldest first;
 * day files past `retentionDays` are no longer read (lineage/journal-files.ts).
 */
export async function* searchJournal(
  directory: string,
  query: LineageQuery,
  retentionDays: number,
): AsyncGenerator<HttpMatch> {
  const since = query.since?.toISOString();
  const prefix = entryPrefix(query.reference);
  const files = await journalFiles(directory, { sinceDay: since?.slice(0, 10), retentionDays });
  for (const file of files) {
    for await (const text of createInterface({
      input: createReadStream(file),
      crlfDelay: Infinity,
    })) {
      if (!text.startsWith(prefix)) continue;
      let entry: JournalEntry;
      try {
        entry = JSON.parse(text) as JournalEntry;
      } catch {
        continue; // a line torn by a crash mid-write
      }
      if (
        !matches(query, entry.kind, entry.businessId) ||
        (since !== undefined && entry.at < since)
      )
        continue;
      yield { source: 'http', ...entry };
    }
  }
}

/** Records of a drop's accepted inputs for the query. */
export async function* searchDrop(
  { pipeline, store }: OpenedDrop,
  query: LineageQuery,
): AsyncGenerator<FileMatch> {
  if (!matches(query, pipeline.kind, pipeline.businessId)) return;
  const drop = `${store.type}:${store.where}`;
  for (const entry of await store.list(`${WORK_FOLDER}/state`)) {
    if (!entry.name.endsWith(LINEAGE_SUFFIX)) continue;
    const sha256 = path.posix.basename(entry.name, LINEAGE_SUFFIX);
    let input: { state?: InputState; location?: string } | undefined;
    if (query.since) {
      // The state is small: inputs processed earlier are skipped without reading their lineage.
      input = await inputOf(sha256);
      if (!input.state?.processedAt || Date.parse(input.state.processedAt) < query.since.getTime())
        continue;
    }
    for await (const { header, record } of findInLineageFile(
      await store.read(entry.name),
      query.reference,
    )) {
      input ??= await inputOf(sha256);
      const { state, location } = input;
      yield {
        source: store.type,
        ...record,
        kind: header.kind,
        businessId: header.businessId,
        pipeline: header.pipeline,
        drop,
        file: header.file,
        sha256: header.sha256,
        ...(state && { status: state.status }),
        ...(state?.processedAt && { processedAt: state.processedAt }),
        ...(state?.receipt && { receipt: state.receipt }),
        ...(location && { location }),
      };
    }
  }

  /** The input's state, and where the file sits now: next to its receipt, unless it was deleted or moved away. */
  async function inputOf(sha256: string): Promise<{ state?: InputState; location?: string }> {
    const state = await readState(store, sha256);
    const place =
      state?.location ??
      (state?.receipt?.endsWith(RECEIPT_SUFFIX)
        ? state.receipt.slice(0, -RECEIPT_SUFFIX.length)
        : undefined);
    const location = place !== undefined && (await store.stat(place)) ? place : undefined;
    return { ...(state && { state }), ...(location && { location }) };
  }
}

const matches = (query: LineageQuery, kind: string, businessId: string) =>
  (query.kind === undefined || query.kind === kind) &&
  (query.businessId === undefined || query.businessId === businessId);

/** One readable line per match: the input, the line, the message id and the receipt. */
export function describeMatch(match: LineageMatch): string {
  const head = `${match.reference} (${match.kind}, ${match.businessId}):`;
  if (match.source === 'history') {
    const m = match as HistoryMatch;
    const line = m.line === undefined ? '' : `, line ${m.line}`;
    const from =
      m.endpoint === undefined ? `file ${m.file}, pipeline ${m.pipeline}` : `POST ${m.endpoint}`;
    return `${head} ${from} at ${m.at}, record ${m.index}${line}, correlation ${m.correlationId}, ${m.outcome} — message ${m.messageId}`;
  }
  if ('endpoint' in match) {
    const m = match as HttpMatch;
    const line = m.line === undefined ? '' : `, line ${m.line}`;
    return `${head} POST ${m.endpoint} at ${m.at}, record ${m.index}${line}, correlation ${m.correlationId} — message ${m.messageId}`;
  }
  const m = match as FileMatch;
  const line = m.line === undefined ? '' : `line ${m.line}, `;
  const where =
    m.location === undefined ? `${m.drop}, no longer in the drop` : `${m.drop}/${m.location}`;
  const receipt =
    m.receipt === undefined ? `no receipt yet (${m.status ?? 'no state'})` : `receipt ${m.receipt}`;
  const processed = m.processedAt === undefined ? '' : `, processed ${m.processedAt}`;
  return `${head} file ${m.file}, ${line}record ${m.index}, pipeline ${m.pipeline} (${where}) — message ${m.messageId}, ${receipt}${processed}`;
}
