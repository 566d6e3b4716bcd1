import type { H3Event } from 'h3';
import type { BatchRecord } from '../history/overview.js';
import type { BatchRow, EventWithAttempts, HistoryStore, Scope } from '../history/store.js';
import { encodeCursor, historyOf } from '../http/partner-reads.js';
import { findBatch, readBatchPage } from '../http/partner-batches.js';
import { isRecordKind, lookupRecord } from '../http/partner-records.js';
import { EVENT_TYPES } from '../events/catalog/index.js';
import { readEventPage } from '../http/partner-events.js';
import { KIND_NAMES } from '../records/kind.js';
import type { BatchesView } from './pages/batches.js';
import type { EventsView } from './pages/events.js';
import type { Notice, Viewer } from './pages/layout.js';
import type { OverviewView } from './pages/overview.js';
import { overviewDays, windowOf } from './pages/overview-figures.js';
import { recordsPage } from './pages/records.js';

/**
 * What the portal's pages read, through the partner API's own helpers (the same queries, the same
 * cursor, the same scope): the portal shows what `GET /api/v2/batches` and the record look-up
 * answer, nothing a business could not read with its key.
 */

const DAY_MS = 86_400_000;

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

/** Records a batch page lists at most (as many as the API's message ids). */
export const RECORDS_SHOWN = 1000;

/** A batch's entries (oldest first; none when the scope has no such batch) and its latest's records. */
export async function singleBatch(
  history: HistoryStore | undefined,
  scope: Scope,
  correlationId: string,
): Promise<{ entries: BatchRow[]; records: BatchRecord[] }> {
  const store = historyOf({ history });
  const entries = await findBatch(store, scope, correlationId);
  const latest = entries.at(-1);
  const records = latest ? await store.batchRecords(scope, latest.id, RECORDS_SHOWN) : [];
  return { entries, records };
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
  const store = historyOf({ history }, 'events');
  const now = Date.now();
  const [page, endpoints] = await Promise.all([
    readEventPage(store, scope, event, params),
    store.endpointDeliveries(scope, { since: new Date(now - DAY_MS), until: new Date(now + 1) }),
  ]);
  return {
    viewer,
    page,
    endpoints,
    types: Object.keys(EVENT_TYPES),
    type: params.type ?? '',
    ...(page.next && { next: encodeCursor(page.next) }),
    paged: params.cursor !== undefined,
    ...(params.limit !== undefined && { limit: Number(params.limit) }),
    ...(notice && { notice }),
  };
}

/** Refused batches and failed deliveries the overview lists, each. */
const LATEST_FAILURES = 5;

/**
 * The overview's figures: three aggregate reads of the history (counted by the store, never rows
 * loaded here), run at once — per day over the last `retentionDays` days, and per endpoint over
 * the last 24 hours.
 */
export async function overviewView(
  history: HistoryStore | undefined,
  scope: Scope,
  viewer: Viewer,
  now: number,
  retentionDays: number,
): Promise<OverviewView> {
  const store = historyOf({ history });
  const [counts, endpoints, failures] = await Promise.all([
    store.dailyBatches(scope, windowOf(now, retentionDays)),
    store.endpointDeliveries(scope, { since: new Date(now - DAY_MS), until: new Date(now + 1) }),
    store.latestFailures(scope, LATEST_FAILURES),
  ]);
  return { viewer, days: overviewDays(counts, now, retentionDays), endpoints, failures };
}

/** An event with its attempts, oldest first; undefined when the scope has no such event. */
export async function oneEvent(
  history: HistoryStore | undefined,
  scope: Scope,
  id: string,
): Promise<EventWithAttempts | undefined> {
  const store = historyOf({ history }, 'events');
  const [event, attempts] = await Promise.all([store.event(scope, id), store.attempts(scope, id)]);
  return event && { ...event, attempts };
}
