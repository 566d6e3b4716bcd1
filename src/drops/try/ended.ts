/**
 * A dropped file's batch ends when a try settles it with a receipt — accepted, rejected, given
 * up on, a duplicate — and is told to the ingest flow's one end of every batch
 * (ingest/batch-end.ts), as an HTTP batch is when `ingest()` returns. A try that only failed for
 * an outage or was interrupted is not an end: the file is tried again, under the same batch.
 * `batchId`: the try's correlation id when records were confirmed under it (they carry it),
 * else a new one.
 */
import { timeOrderedId } from '../../ids.js';
import type { Receipt } from '../receipts.js';
import type { FileTry, TryContext } from './context.js';

export function fileEnded(
  ctx: TryContext,
  tr: FileTry,
  receipt: Receipt,
  { correlationId, recordCount }: { correlationId: string | undefined; recordCount: number },
): void {
  const { ends } = ctx.ingest;
  if (!ends) return;
  const batchId = correlationId ?? timeOrderedId();
  const refused = receipt.outcome === 'rejected' || receipt.outcome === 'dead';
  ends.ended({
    batchId,
    correlationId: batchId,
    businessId: ctx.pipeline.businessId,
    source: { type: ctx.store.type, name: ctx.pipeline.name, file: tr.held.name },
    kind: ctx.pipeline.kind,
    recordCount,
    outcome: receipt.outcome,
    ...(refused && { problem: receipt.response }),
    receipt,
    at: new Date(receipt.processedAt),
  });
}
