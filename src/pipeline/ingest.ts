import { performance } from 'node:perf_hooks';
import { InternalError, MalformedBody, PayloadTooLarge, ValidationFailed, type RecordErrors } from '../errors.js';
import type { Logger } from '../log.js';
import type { RecordKind } from '../records/kind.js';
import type { SenderTerms } from '../records/legacy/sender-terms.js';
import { validateRecord } from '../records/validate.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import { MessageIds } from './message-id.js';
import { RepeatFilter } from './repeat-filter.js';
import type { RoutingKeyFor } from './route.js';

/** Where a batch came from: written on every message and every log line of the batch. */
export interface BatchSource {
  /** `http`, `local`, `sftp`, `s3`, `reprocess`. */
  readonly type: string;
  /** The endpoint path, or the pipeline name for a file drop. */
  readonly name: string;
}

interface BatchBase {
  readonly kind: RecordKind;
  /** The authenticated business (HTTP) or the business a pipeline acts for (file drop). */
  readonly businessId: string;
  readonly correlationId: string;
  readonly source: BatchSource;
  /** Logger already carrying the batch's context: correlation id, business, kind, and the file for a drop. */
  readonly log: Logger;
  /** More records than this: 413, before anything is published. */
  readonly maxRecords?: number;
  /** Fields that differ between tries of the same input (receipt time): left out of message ids. */
  readonly volatilePaths?: readonly string[];
}

/** A batch held in memory (a JSON body): validated once, published at once. */
export interface ArrayBatch extends BatchBase {
  /** Candidate v2 records, as decoded (or converted from a legacy shape). */
  readonly records: readonly unknown[];
  /** For converted (legacy) batches: puts errors in the sender's terms (legacy path, CSV line and column). */
  readonly senderTerms?: SenderTerms;
}

/** One decoded record of a streamed batch, with its errors' way back to the sender's input. */
export interface Candidate {
  readonly record: unknown;
  /** Problems found before validation (decoding, conversion), already in the sender's terms. */
  readonly early?: readonly string[];
  /** The record's final error list in the sender's terms, given its v2 errors. */
  readonly explain?: (v2Errors: readonly string[]) => string[];
}

/** Which of a streamed batch's two passes an `open()` serves. */
export type StreamPass = 'validate' | 'publish';

/**
 * A batch too large to hold as objects (a big CSV file): `open()` is called twice and must
 * yield the same candidates in the same order — once to validate every record, once to publish.
 * The publish pass may skip checks that need memory and can find nothing new (e.g. CSV order
 * contiguity), since it runs only after the validation pass found no problem at all.
 */
export interface StreamBatch extends BatchBase {
  open(pass: StreamPass): AsyncIterable<Candidate>;
  /**
   * Takes the message ids of each confirmed chunk, in order. With it the ids of a large file are
   * not collected in memory, and the returned `messageIds` is empty: the sink has them all.
   */
  readonly onConfirmed?: (messageIds: readonly string[]) => Promise<void>;
}

export type Batch = ArrayBatch | StreamBatch;

/** The `202` body (spec §2.1). */
export interface BulkResponse {
  success: true;
  recordCount: number;
  messageIds: string[];
  correlationId: string;
}

export interface IngestDependencies {
  readonly publisher: Publisher;
  readonly routingKeyFor: RoutingKeyFor;
}

export type Ingest = (batch: Batch) => Promise<BulkResponse>;

/** A streamed batch lists at most this many failing records (and says how many failed). */
export const MAX_LISTED_FAILURES = 1000;
/** A streamed batch is published in chunks of this many messages, each confirmed before the next. */
export const PUBLISH_CHUNK = 1000;

/**
 * The one flow every source goes through: validate every record (all-or-nothing), route,
 * give each record its stable id, publish, and report accepted only after the publisher
 * confirmed every message. Throws `ValidationFailed` (nothing published) or
 * `PublishFailed` (nothing reported accepted; a retry is safe: same records, same ids).
 */
export function createIngest({ publisher, routingKeyFor }: IngestDependencies): Ingest {
  function toMessage(batch: Batch, ids: MessageIds, record: Record<string, unknown>, timestamp: number, headers: Record<string, string>): OutboundMessage {
    const body = Buffer.from(JSON.stringify(record));
    return {
      messageId: ids.forRecord(record, body),
      routingKey: routingKeyFor(batch.kind.name, batch.businessId, record),
      body,
      type: batch.kind.name,
      correlationId: batch.correlationId,
      timestamp,
      headers,
    };
  }

  function reject(batch: Batch, failures: RecordErrors[], failing: number, total: number): never {
    batch.log.info({ records: total, failing }, 'batch rejected');
    const listed = failing > failures.length ? `; the first ${failures.length} are listed` : '';
    throw new ValidationFailed({
      detail: `${failing} of ${total} record(s) failed validation${listed}; no record was accepted.`,
      errors: failures,
    });
  }

  function checkCount(batch: Batch, count: number): void {
    if (count === 0) throw new MalformedBody({ detail: 'The batch holds no records.' });
    if (batch.maxRecords !== undefined && count > batch.maxRecords) {
      throw new PayloadTooLarge({
        detail: `The batch holds ${count}${'records' in batch ? '' : ' or more'} records; the limit is ${batch.maxRecords} records per batch. Split it into smaller batches.`,
      });
    }
  }

  async function ingestArray(batch: ArrayBatch): Promise<{ count: number; messageIds: string[] }> {
    const { kind, businessId, records, senderTerms } = batch;
    checkCount(batch, records.length);
    const accepted: Record<string, unknown>[] = new Array(records.length);
    const failures: RecordErrors[] = [];
    for (let index = 0; index < records.length; index++) {
      const result = validateRecord(kind, records[index], businessId);
      if (senderTerms && (!result.ok || senderTerms.earlyErrors(index))) {
        failures.push({ index, errors: senderTerms.explain(index, result.ok ? [] : result.errors) });
      } else if (result.ok) accepted[index] = result.record;
      else failures.push({ index, errors: result.errors });
    }
    if (failures.length > 0) reject(batch, failures, failures.length, records.length);

    const ids = new MessageIds(businessId, kind.name, batch.volatilePaths);
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messages = accepted.map((record) => toMessage(batch, ids, record, timestamp, headers));
    await publisher.publish(messages);
    return { count: messages.length, messageIds: messages.map((message) => message.messageId) };
  }

  async function ingestStream(batch: StreamBatch): Promise<{ count: number; messageIds: string[] }> {
    const { kind, businessId } = batch;
    // Pass 1: validate everything; nothing is kept but the errors.
    const failures: RecordErrors[] = [];
    const repeats = new RepeatFilter();
    const digests = new MessageIds(businessId, kind.name, batch.volatilePaths);
    let failing = 0;
    let total = 0;
    for await (const candidate of batch.open('validate')) {
      const result = validateRecord(kind, candidate.record, businessId);
      if (result.ok && !candidate.early && failing === 0) {
        const digest = digests.digest(result.record, Buffer.from(JSON.stringify(result.record)));
        repeats.add(digest, digest.toString('hex'));
      } else if (!result.ok || candidate.early) {
        failing += 1;
        if (failures.length < MAX_LISTED_FAILURES) {
          const v2Errors = result.ok ? [] : result.errors;
          failures.push({ index: total, errors: candidate.explain ? candidate.explain(v2Errors) : v2Errors });
        }
      }
      total += 1;
      if (batch.maxRecords !== undefined && total > batch.maxRecords) checkCount(batch, total);
    }
    checkCount(batch, total);
    if (failing > 0) reject(batch, failures, failing, total);

    // Pass 2: publish in confirmed chunks; a failure part-way leaves only stable-id copies behind.
    const ids = new MessageIds(businessId, kind.name, batch.volatilePaths, (hex) => repeats.mayRepeat(hex));
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messageIds: string[] = [];
    let published = 0;
    let chunk: OutboundMessage[] = [];
    const flush = async () => {
      await publisher.publish(chunk);
      published += chunk.length;
      if (batch.onConfirmed) await batch.onConfirmed(chunk.map((message) => message.messageId));
      else for (const message of chunk) messageIds.push(message.messageId);
      chunk = [];
    };
    for await (const candidate of batch.open('publish')) {
      const result = validateRecord(kind, candidate.record, businessId);
      if (!result.ok) throw new InternalError({ detail: 'The input changed between validation and publishing; nothing more was published.' });
      chunk.push(toMessage(batch, ids, result.record, timestamp, headers));
      if (chunk.length === PUBLISH_CHUNK) await flush();
    }
    if (chunk.length > 0) await flush();
    if (published !== total) throw new InternalError({ detail: 'The input changed between validation and publishing.' });
    return { count: published, messageIds };
  }

  return async function ingest(batch) {
    const started = performance.now();
    const { count, messageIds } = 'records' in batch ? await ingestArray(batch) : await ingestStream(batch);
    batch.log.info({ records: count, publisher: publisher.name, ms: Math.round(performance.now() - started) }, 'batch accepted');
    return { success: true, recordCount: count, messageIds, correlationId: batch.correlationId };
  };
}

function messageHeaders(batch: Batch): Record<string, string> {
  return { 'business-id': batch.businessId, source: batch.source.type, 'source-name': batch.source.name };
}
