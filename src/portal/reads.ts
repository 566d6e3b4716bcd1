import type { H3Event } from 'h3';
import type { BatchRow, HistoryStore, Scope } from '../history/store.js';
import { encodeCursor, historyOf } from '../http/partner-reads.js';
import { findBatch, readBatchPage } from '../http/partner-batches.js';
import { isRecordKind, lookupRecord } from '../http/partner-records.js';
import { EVENT_TYPES } from '../events/catalog/index.js';
import { readEventPage } from '../http/partner-events.js';
import { KIND_NAMES } from '../records/kind.js';
import type { BatchesView } from './pages/batches.js';
import type { EventsView } from './pages/events.js';
import type { Notice, Viewer } from './pages/layout.js';
import { recordsPage } from './pages/records.js';

/**
 * What the portal's pages read, through the partner API's own helpers (the same queries, the same
 * cursor, the same scope): the portal shows what `GET /api/v2/batches` and the record look-up
 * answer, nothing a business could not read with its key.
 */

/** A filter form sends empty fields for "any": the API's strict query would refuse them. */
function filledParams(event: H3Event): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of new URL(event.req.url).searchParams)
    if (value !== '') params[name] = value;
  return params;
}

export async function batchesView(
  history: HistoryStore | undefined,
  event: H3Event,
  scope: Scope,
  viewer: Viewer,
): Promise<BatchesView> {
  const params = filledParams(event);
  const page = await readBatchPage(historyOf({ history }), scope, event, params);
  return {
    viewer,
    page,
    outcome: params.outcome ?? '',
    kind: params.kind ?? '',
    ...(page.next && { next: encodeCursor(page.next) }),
    paged: params.cursor !== undefined,
    ...(params.limit !== undefined && { limit: Number(params.limit) }),
  };
}

export function singleBatch(
  history: HistoryStore | undefined,
  scope: Scope,
  correlationId: string,
): Promise<BatchRow[]> {
  return findBatch(historyOf({ history }), scope, correlationId);
}

export async function recordsView(
  history: HistoryStore | undefined,
  event: H3Event,
  scope: Scope,
  viewer: Viewer,
): Promise<Response> {
  const params = filledParams(event);
  const kind = params.kind !== undefined && isRecordKind(params.kind) ? params.kind : KIND_NAMES[0];
  const key = (params.key ?? '').slice(0, 200);
  if (!key) return recordsPage({ viewer, kind, key, searched: false });
  const found = await lookupRecord(historyOf({ history }, 'records'), scope, kind, key);
  return recordsPage({ viewer, kind, key, searched: true, ...(found && { found }) });
}

export async function eventsView(
  history: HistoryStore | undefined,
  event: H3Event,
  scope: Scope,
  viewer: Viewer,
  notice: Notice | undefined,
): Promise<EventsView> {
  const params = filledParams(event);
  const page = await readEventPage(historyOf({ history }, 'events'), scope, event, params);
  return {
    viewer,
    page,
    types: Object.keys(EVENT_TYPES),
    type: params.type ?? '',
    ...(page.next && { next: encodeCursor(page.next) }),
    paged: params.cursor !== undefined,
    ...(params.limit !== undefined && { limit: Number(params.limit) }),
    ...(notice && { notice }),
  };
}
