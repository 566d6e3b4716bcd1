/**
 * The history's side of the one end of every batch (ingest/batch-end.ts): a batch's end becomes
 * its row (with its records when they came with it), and records told chunk by chunk become
 * record rows under their batch's id. Queued on the writer, never awaited: a `202` or a receipt
 * never waits on the history.
 */
import type { BatchEnd, BatchEnds } from '../ingest/batch-end.js';
import { batchWrites, recordWrites } from './entries.js';
import type { BatchSource } from './store.js';
import type { HistoryWriter } from './writer.js';

export function historyBatchEnds(writer: HistoryWriter): BatchEnds {
  return {
    confirmed(batchId, businessId, records) {
      writer.add(recordWrites(batchId, businessId, new Date(), [records]));
    },
    ended(end) {
      writer.add(
        batchWrites(
          {
            id: end.batchId,
            correlationId: end.correlationId,
            businessId: end.businessId,
            source: sourceOf(end),
            kind: end.kind,
            recordCount: end.recordCount,
            outcome: end.outcome,
            problem: end.problem,
            receipt: end.receipt,
            at: end.at,
          },
          end.records,
        ),
      );
    },
  };
}

/** An HTTP batch is kept by its endpoint; every other source is a pipeline's file. */
function sourceOf({ source }: BatchEnd): BatchSource {
  return source.type === 'http'
    ? { endpoint: source.name }
    : { pipeline: source.name, fileName: source.file ?? '' };
}
