/**
 * The history's side of the one end of every batch (the ingest flow's `BatchEnds` port,
 * ingest/batch-end.ts, which this fits structurally: the history imports nothing of the flow): a
 * batch's end becomes its row (with its records when they came with it), and records told chunk
 * by chunk become record rows under their batch's id. Queued on the writer, never awaited: a
 * `202` or a receipt never waits on the history.
 */
import { batchWrites, type BatchFacts, type Confirmed, recordWrites } from './entries.js';
import type { BatchSource } from './store.js';
import type { HistoryWriter } from './writer.js';

/** A batch that ended, as the flow tells it. */
export interface EndedBatch extends Omit<BatchFacts, 'id' | 'source'> {
  readonly batchId: string;
  readonly source: { readonly type: string; readonly name: string; readonly file?: string };
  readonly records?: readonly Confirmed[];
}

/** The port as the history implements it. */
export interface HistoryBatchEnds {
  confirmed(batchId: string, businessId: string, records: Confirmed): void;
  ended(end: EndedBatch): void;
}

export function historyBatchEnds(writer: HistoryWriter): HistoryBatchEnds {
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
function sourceOf({ source }: EndedBatch): BatchSource {
  return source.type === 'http'
    ? { endpoint: source.name }
    : { pipeline: source.name, fileName: source.file ?? '' };
}
