import type { H3Event } from 'h3';
import { z } from 'zod';
import { NotFound } from '../errors.js';
import type { BatchEntry, BatchPage, BatchRow, HistoryStore, Scope } from '../history/store.js';
import { KIND_NAMES } from '../records/kind.js';
import { HISTORY_BATCH_OUTCOMES, type HistoryBatchOutcome } from '../vocabulary.js';
import {
  decoded,
  encodeCursor,
  historyOf,
  listQuery,
  type PartnerReadDependencies,
  queryTime,
  readListQuery,
} from './partner-reads.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * The partner API's reads of a business's own batches, from the history: what a `202`, a `400`
 * or a receipt said, found again later by the business itself. Same credentials, rate limits and
 * problem details as the batch endpoints (partner-reads.ts).
 */

/** Message ids a batch's answer lists at most: a million-record file's answer stays small. */
export const MESSAGE_IDS_SHOWN = 1000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The list's query: the API's, and the portal's filter form (through `readBatchPage`). */
const BatchQuery = listQuery({
  since: queryTime.optional(),
  until: queryTime.optional(),
  outcome: z
    .enum(HISTORY_BATCH_OUTCOMES as [HistoryBatchOutcome, ...HistoryBatchOutcome[]])
    .optional(),
  kind: z.enum(KIND_NAMES).optional(),
  source: z.string().min(1).max(512).optional(),
});

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

/**
 * A page of the business's batches, newest first, as the request's query asks (the list the API
 * and the portal both show). `params`: the query to read instead of the URL's.
 */
export function readBatchPage(
  history: HistoryStore,
  scope: Scope,
  event: H3Event,
  params?: Record<string, string>,
): Promise<BatchPage> {
  const { filter, limit, after } = readListQuery(event, BatchQuery, (id) => UUID.test(id), params);
  return history.listBatches(scope, filter, { limit, ...(after && { after }) });
}

/** The entries of one of the business's batches, oldest first (a retried file may have several). */
export function findBatch(
  history: HistoryStore,
  scope: Scope,
  correlationId: string,
): Promise<BatchRow[]> {
  return history.batches(scope, correlationId, { messageIds: MESSAGE_IDS_SHOWN });
}

/** GET /api/v2/batches: the business's batches, newest first, a page at a time. */
export function listBatchesHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const page = await readBatchPage(historyOf(deps), { businessId }, event);
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
    const correlationId = decoded(event.context.params?.correlationId ?? '', 'correlationId');
    const entries = await findBatch(historyOf(deps), { businessId }, correlationId);
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
