import { performance } from 'node:perf_hooks';
import { isIngestError, toProblem } from '../errors.js';
import { timeOrderedId } from '../ids.js';
import { referenceOf } from '../records/kind.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import type {
  ArrayBatch,
  Batch,
  BatchOutcome,
  BulkResponse,
  ConfirmedRecords,
  Ingest,
  StreamBatch,
} from './batch.js';
import type { BatchEnd, BatchEnds } from './batch-end.js';
import type { IngestOutcome } from '../vocabulary.js';
import { MessageIds } from './message-id.js';
import { routableCheck, type RoutingKeyFor } from './route.js';
import { validateInHalves } from './halves.js';
import {
  prepareStream,
  publishStream,
  spoolPlan,
  type PreparedStream,
  type Published,
} from './stream-publish.js';
import { validateBatch, type RecordCheck, type Verdict } from './validate-batch.js';

/**
 * Which `IngestOutcome` a failure is, by the status its typed error declares: 4xx `rejected`
 * (the input's fault), 503 `unavailable` (the broker or the store, or a stop), anything else `error`.
 */
export function failureOutcome(error: unknown): IngestOutcome {
  if (!isIngestError(error)) return 'error';
  if (error.status < 500) return 'rejected';
  return error.status === 503 ? 'unavailable' : 'error';
}

export interface IngestDependencies {
  readonly publisher: Publisher;
  readonly routingKeyFor: RoutingKeyFor;
  /** Told how every batch ended (metrics); must not throw. */
  readonly observer?: (outcome: BatchOutcome) => void;
  /**
   * The one end of every batch (the history): its confirmed records and how it ended, exactly
   * once per batch (batch-end.ts). @default none
   */
  readonly ends?: BatchEnds;
}

/** What the flow keeps of one batch for its end. */
interface Ending {
  readonly batchId: string;
  /** An array batch's confirmed records, told with its end (one write for a small batch). */
  records?: ConfirmedRecords[];
}

export { MAX_LISTED_FAILURES } from './validate-batch.js';
export { PUBLISH_CHUNK } from './stream-publish.js';

/**
 * The one flow every source goes through: validate every record (all-or-nothing), route,
 * give each record its stable id, publish, and report accepted only after the publisher
 * confirmed every message. Throws `ValidationFailed` (nothing published) or
 * `PublishFailed` (nothing reported accepted; a retry is safe: same records, same ids).
 */
export function createIngest({
  publisher,
  routingKeyFor,
  observer,
  ends,
}: IngestDependencies): Ingest {
  function toMessage(
    batch: Batch,
    ids: MessageIds,
    record: Record<string, unknown>,
    timestamp: number,
    headers: Record<string, string>,
  ): OutboundMessage {
    const { body, messageId } = ids.encode(record, JSON.stringify(record));
    return {
      messageId,
      routingKey: routingKeyFor(batch.kind.name, batch.businessId, record),
      body,
      type: batch.kind.name,
      correlationId: batch.correlationId,
      timestamp,
      headers,
    };
  }

  async function ingestArray(
    batch: ArrayBatch,
    accepted: Record<string, unknown>[],
    ending: Ending,
  ): Promise<Published> {
    const ids = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths);
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messages = accepted.map((record) => toMessage(batch, ids, record, timestamp, headers));
    await publisher.publish(messages);
    const messageIds = messages.map((message) => message.messageId);
    if (!ends && !batch.onConfirmed) return { count: messages.length, messageIds };
    const records: ConfirmedRecords = {
      first: 0,
      messageIds,
      references: accepted.map((record) => referenceOf(batch.kind, record)),
    };
    // A batch the flow ends takes its records with its end; a dropped file's end comes later.
    if (ends && batch.endedBySource) ends.confirmed(ending.batchId, batch.businessId, records);
    else if (ends) ending.records = [records];
    if (!batch.onConfirmed) return { count: messages.length, messageIds };
    await batch.onConfirmed(records);
    return { count: messages.length, messageIds: [] };
  }

  /** Where a streamed batch's confirmed records go: to `ends`, chunk by chunk. */
  const streamSink = (batch: Batch, ending: Ending) =>
    ends &&
    ((records: ConfirmedRecords) => ends.confirmed(ending.batchId, batch.businessId, records));

  /** The validation pass of a streamed batch: in two halves at once where it can, else in one. */
  async function validateStreamed(
    batch: StreamBatch,
    routable: RecordCheck | undefined,
  ): Promise<{ verdict: Verdict; prepared: PreparedStream; inHalves: boolean }> {
    if (batch.halves) {
      const halves = await validateInHalves(batch, batch.halves, routingKeyFor);
      if (halves.decided) {
        const verdict: Verdict = { ok: true, total: halves.total };
        return { verdict, prepared: halves.prepared, inHalves: true };
      }
      batch.log.debug({ reason: halves.reason }, 'validating the input in one pass');
    }
    const spooler = prepareStream(spoolPlan(batch, ends !== undefined), routingKeyFor);
    try {
      const verdict = await validateBatch(batch, spooler.onValid, routable);
      await spooler.spool.finish();
      return { verdict, prepared: spooler, inHalves: false };
    } catch (error) {
      await spooler.spool.remove();
      throw error;
    }
  }

  async function validateAndPublish(
    batch: Batch,
    spools: { prepared?: PreparedStream },
    observe: (outcome: BatchOutcome['outcome'], records: number, error?: unknown) => void,
    started: number,
    ending: Ending,
  ): Promise<BulkResponse> {
    let verdict: Verdict;
    let validatedAt = started;
    let inHalves = false;
    if (batch.unreadable !== undefined) {
      observe(failureOutcome(batch.unreadable), 0, batch.unreadable);
      throw batch.unreadable;
    }
    try {
      // A record whose routing key AMQP cannot carry is refused with the rest of the validation.
      const routable = routableCheck(routingKeyFor, batch.kind.name, batch.businessId);
      if (batch.mode === 'stream') {
        const streamed = await validateStreamed(batch, routable);
        ({ verdict, inHalves } = streamed);
        spools.prepared = streamed.prepared;
      } else verdict = await validateBatch(batch, undefined, routable);
      validatedAt = performance.now();
    } catch (error) {
      // A stream that cannot be read (broken CSV is a 4xx; a disk error is not) fails here too.
      observe(failureOutcome(error), batch.mode === 'array' ? batch.records.length : 0, error);
      throw error;
    }
    batch.ignoredFields?.logNew(batch.log, batch.businessId, batch.kind.name);
    if (!verdict.ok) {
      batch.log.info({ records: verdict.total, failing: verdict.failing }, 'batch rejected');
      observe('rejected', verdict.total, verdict.error);
      throw verdict.error;
    }
    let published: Published;
    try {
      if (batch.onValidated) await batch.onValidated(verdict.total);
      published =
        batch.mode === 'array'
          ? await ingestArray(batch, verdict.accepted ?? [], ending)
          : await publishStream(
              batch,
              spools.prepared!,
              publisher,
              messageHeaders(batch),
              streamSink(batch, ending),
            );
    } catch (error) {
      observe(failureOutcome(error), verdict.total, error);
      throw error;
    }
    const { count, messageIds } = published;
    batch.log.info(
      {
        records: count,
        publisher: publisher.name,
        ms: Math.round(performance.now() - started),
        // Of those, the validation pass: with `ms`, where a slow batch spent its time.
        validateMs: Math.round(validatedAt - started),
        ...(inHalves && { validatedInHalves: true }),
      },
      'batch accepted',
    );
    observe('accepted', count);
    const ignored = batch.ignoredFields?.size ? { ignoredFields: batch.ignoredFields.list() } : {};
    return {
      success: true,
      recordCount: count,
      messageIds,
      correlationId: batch.correlationId,
      ...ignored,
    };
  }

  const ingest: Ingest = async (batch) => {
    const started = performance.now();
    const ending: Ending = { batchId: batch.batchId ?? timeOrderedId() };
    const observe = (outcome: BatchOutcome['outcome'], records: number, error?: unknown) => {
      observer?.({ batch, outcome, records, ms: performance.now() - started, error });
      if (ends && !batch.endedBySource)
        ends.ended(batchEnd(batch, ending, outcome, records, error));
    };
    const spools: { prepared?: PreparedStream } = {};
    try {
      return await validateAndPublish(batch, spools, observe, started, ending);
    } finally {
      await spools.prepared?.spool.remove();
    }
  };
  return ends ? Object.assign(ingest, { ends }) : ingest;
}

/**
 * How a batch the flow ends is told to `BatchEnds`: an accepted one with its records (an array
 * batch's; a streamed one's went chunk by chunk), a refused one with the problem details its
 * answer carried and no records (nothing of it counts as accepted).
 */
function batchEnd(
  batch: Batch,
  ending: Ending,
  outcome: BatchOutcome['outcome'],
  records: number,
  error: unknown,
): BatchEnd {
  const accepted = outcome === 'accepted';
  return {
    batchId: ending.batchId,
    correlationId: batch.correlationId,
    businessId: batch.businessId,
    kind: batch.kind.name,
    source: batch.source,
    outcome,
    recordCount: accepted ? records : 0,
    ...(!accepted && { problem: toProblem(error).problem }),
    at: new Date(),
    ...(accepted && ending.records && { records: ending.records }),
  };
}

/** The AMQP headers every message of a batch carries. */
export function messageHeaders(batch: Batch): Record<string, string> {
  const headers: Record<string, string> = {
    'business-id': batch.businessId,
    source: batch.source.type,
    'source-name': batch.source.name,
  };
  // W3C Trace Context over AMQP: the same header names as over HTTP, so a consumer's propagator reads them.
  const { trace } = batch;
  if (trace) {
    headers.traceparent = trace.traceparent;
    if (trace.tracestate) headers.tracestate = trace.tracestate;
  }
  return headers;
}
