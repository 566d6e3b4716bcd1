/**
 * A settled file as the history keeps it: one batch row with the pipeline, the file name, the
 * outcome and the receipt (a rejection's or a give-up's problem details beside it). `id`: the
 * try's correlation id when records were confirmed under it (they point to this row), else a new one.
 */
import { timeOrderedId } from '../../ids.js';
import { batchWrites } from '../../history/entries.js';
import type { Receipt } from '../receipts.js';
import type { FileTry, TryContext } from './context.js';

export function settledToHistory(
  ctx: TryContext,
  tr: FileTry,
  receipt: Receipt,
  { correlationId, recordCount }: { correlationId: string | undefined; recordCount: number },
): void {
  if (!ctx.history) return;
  const id = correlationId ?? timeOrderedId();
  const refused = receipt.outcome === 'rejected' || receipt.outcome === 'dead';
  ctx.history.add(
    batchWrites({
      id,
      correlationId: id,
      businessId: ctx.pipeline.businessId,
      source: { pipeline: ctx.pipeline.name, fileName: tr.held.name },
      kind: ctx.pipeline.kind,
      recordCount,
      outcome: receipt.outcome,
      ...(refused && { problem: receipt.response }),
      receipt,
      at: new Date(receipt.processedAt),
    }),
  );
}
