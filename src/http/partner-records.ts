import type { H3Event } from 'h3';
import { NotFound } from '../errors.js';
import type { EventEntry, HistoryStore, RecordRow, Scope } from '../history/store.js';
import { RECORD_NUMBER_FIELDS } from '../events/catalog/record-numbers.js';
import { KIND_NAMES, type KindName } from '../records/kind.js';
import { eventSummary } from './partner-events.js';
import { decoded, historyOf, type PartnerReadDependencies } from './partner-reads.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * GET /api/v2/records/{kind}/{key}: one of the business's records by its own number (a sales
 * order's `shipmentId`, …), from the history: the batches that carried it with the message id
 * each gave it, the warehouse's events about it, and its state.
 *
 * The interface leaves a record's states "not shown"; these are what the service sees of it:
 * `accepted` once a batch carrying it was confirmed by the broker, then the type of the latest
 * event the warehouse sent about it (`sales-order.shipped`, …): an event naming one of its
 * message ids, or its number in the field the catalog gives its kind (record-numbers.ts). A record only ever refused is not
 * in the history (a refused batch has no records): its batch is, under `GET /api/v2/batches`.
 */
const KINDS = new Set<string>(KIND_NAMES);

/** Carriers shown at most: a number sent again and again stays one small answer. */
const CARRIERS_SHOWN = 100;

const carrier = (row: RecordRow) => ({
  correlationId: row.batch.correlationId,
  receivedAt: row.batch.at.toISOString(),
  source: row.batch.source,
  messageId: row.messageId,
  index: row.index,
  ...(row.line !== undefined && { line: row.line }),
});

/** What the history knows of one record: its state, the batches that carried it, its events. */
export interface RecordLookup {
  readonly state: string;
  /** Newest first, at most `CARRIERS_SHOWN`. */
  readonly carriers: readonly RecordRow[];
  /** Oldest first. */
  readonly events: readonly EventEntry[];
}

export function isRecordKind(kind: string): kind is KindName {
  return KINDS.has(kind);
}

/** One of the business's records by kind and number (the API's and the portal's lookup); undefined when never accepted. */
export async function lookupRecord(
  history: HistoryStore,
  scope: Scope,
  kind: KindName,
  key: string,
): Promise<RecordLookup | undefined> {
  const carriers = (await history.records(scope, key, CARRIERS_SHOWN)).filter(
    (row) => row.batch.kind === kind,
  );
  if (carriers.length === 0) return undefined;
  const events = await history.eventsAbout(
    scope,
    carriers.map((row) => row.messageId),
    { ...RECORD_NUMBER_FIELDS[kind], value: key },
  );
  return { state: events.at(-1)?.type ?? 'accepted', carriers, events };
}

export function recordHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const kind = event.context.params?.kind ?? '';
    const key = decoded(event.context.params?.key ?? '', 'key');
    const history = historyOf(deps, 'records');
    if (!isRecordKind(kind))
      throw new NotFound({
        detail: `No record kind ${JSON.stringify(kind.slice(0, 50))}: one of ${KIND_NAMES.join(', ')}.`,
      });
    const found = await lookupRecord(history, { businessId }, kind, key);
    if (!found)
      throw new NotFound({
        detail: `No ${kind} record of yours numbered ${JSON.stringify(key.slice(0, 100))} was accepted within the history's retention.`,
      });
    return jsonResponse(
      200,
      {
        kind,
        key,
        state: found.state,
        batches: found.carriers.map(carrier),
        events: found.events.map(eventSummary),
      },
      context,
      deps.responseHeaders,
    );
  };
}
