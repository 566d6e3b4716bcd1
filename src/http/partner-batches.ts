import type { H3Event } from 'h3';
import { z } from 'zod';
import { InvalidQuery, NotFound } from '../errors.js';
import type { BatchCursor, BatchEntry, HistoryStore } from '../history/store.js';
import type { Logger } from '../log.js';
import { KIND_NAMES } from '../records/kind.js';
import { HISTORY_BATCH_OUTCOMES, type HistoryBatchOutcome } from '../vocabulary.js';
import type { Admission } from './admission.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * The partner API's reads of a business's own batches, from the history: what a `202`, a `400`
 * or a receipt said, found again later by the business itself. Same credentials, rate limits and
 * problem details as the batch endpoints; every read is scoped to the authenticated business, so
 * another business's correlation id answers 404 exactly as an unknown one does.
 */
export interface PartnerReadDependencies {
  readonly admission: Admission;
  readonly log: Logger;
  /** The history's reads; undefined when it is off (`history.enabled: false`, the sandbox). */
  readonly history?: HistoryStore;
  readonly responseHeaders: Record<string, string>;
}

/** Message ids a batch's answer lists at most: a million-record file's answer stays small. */
export const MESSAGE_IDS_SHOWN = 1000;

const PAGE_DEFAULT = 25;
const PAGE_MAX = 100;

const time = z.iso
  .datetime({ offset: true })
  .transform((text) => new Date(text))
  .describe('an ISO 8601 date-time with a zone');

const ListQuery = z.strictObject({
  since: time.optional(),
  until: time.optional(),
  outcome: z
    .enum(HISTORY_BATCH_OUTCOMES as [HistoryBatchOutcome, ...HistoryBatchOutcome[]])
    .optional(),
  kind: z.enum(KIND_NAMES).optional(),
  source: z.string().min(1).max(512).optional(),
  limit: z.coerce.number().int().min(1).max(PAGE_MAX).default(PAGE_DEFAULT),
  cursor: z.string().max(200).optional(),
});

/** A cursor is the last batch of a page, opaque to the client: `base64url(<at ms>.<id>)`. */
export function encodeCursor(cursor: BatchCursor): string {
  return Buffer.from(`${cursor.at.getTime()}.${cursor.id}`).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function decodeCursor(text: string): BatchCursor | undefined {
  const [ms, id, extra] = Buffer.from(text, 'base64url').toString('latin1').split('.');
  const at = new Date(Number(ms));
  if (extra !== undefined || !id || !UUID.test(id) || !/^\d+$/.test(ms ?? '')) return undefined;
  return Number.isNaN(at.getTime()) ? undefined : { at, id };
}

function parseQuery(event: H3Event) {
  const params = Object.fromEntries(new URL(event.req.url).searchParams);
  const parsed = ListQuery.safeParse(params);
  if (!parsed.success)
    throw new InvalidQuery({
      detail: 'A query parameter is not one this list takes; `errors` names each.',
      errors: parsed.error.issues.map((issue) => ({
        path:
          issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : ''),
        message: issue.code === 'unrecognized_keys' ? 'Unknown parameter' : issue.message,
      })),
    });
  const { cursor, limit, ...filter } = parsed.data;
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  if (cursor !== undefined && !after)
    throw new InvalidQuery({
      detail:
        'The cursor is not one this service gave: pass `next` from the previous page as it is.',
      errors: [{ path: 'cursor', message: 'Unknown cursor' }],
    });
  return { filter, limit, after };
}

/** A batch as the API shows it: what it answered, never which instance or row it was. */
function batchView(batch: BatchEntry) {
  return {
    correlationId: batch.correlationId,
    receivedAt: batch.at.toISOString(),
    source: batch.source,
    kind: batch.kind,
    outcome: batch.outcome,
    recordCount: batch.recordCount,
    ...(batch.problem !== undefined && { problem: batch.problem }),
    ...(batch.receipt !== undefined && { receipt: batch.receipt }),
  };
}

function historyOf(deps: PartnerReadDependencies): HistoryStore {
  if (deps.history) return deps.history;
  throw new NotFound({
    detail:
      'This service keeps no history (`history.enabled` is false), so it has no batches to show.',
  });
}

/** GET /api/v2/batches: the business's batches, newest first, a page at a time. */
export function listBatchesHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const { filter, limit, after } = parseQuery(event);
    const page = await historyOf(deps).listBatches({ businessId }, filter, {
      limit,
      ...(after && { after }),
    });
    return jsonResponse(
      200,
      {
        items: page.items.map(batchView),
        ...(page.next && { next: encodeCursor(page.next) }),
      },
      context,
      deps.responseHeaders,
    );
  };
}

/**
 * GET /api/v2/batches/{correlationId}: the batch a `202`, `400` or receipt named, with its
 * records' message ids in batch order (the first `MESSAGE_IDS_SHOWN`). A retried file may have
 * several entries under one id: the newest is the answer, the earlier ones follow in `earlier`.
 */
export function oneBatchHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const correlationId = event.context.params?.correlationId ?? '';
    const entries = await historyOf(deps).batches({ businessId }, correlationId, {
      messageIds: MESSAGE_IDS_SHOWN,
    });
    const newest = entries.at(-1);
    if (!newest)
      throw new NotFound({
        detail: `No batch of yours has correlation id ${JSON.stringify(correlationId.slice(0, 100))} in the history.`,
      });
    return jsonResponse(
      200,
      {
        ...batchView(newest),
        messageIds: newest.messageIds,
        ...(newest.recordCount > newest.messageIds.length &&
          newest.messageIds.length === MESSAGE_IDS_SHOWN && { messageIdsTruncated: true }),
        ...(entries.length > 1 && { earlier: entries.slice(0, -1).reverse().map(batchView) }),
      },
      context,
      deps.responseHeaders,
    );
  };
}
