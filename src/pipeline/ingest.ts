import { performance } from 'node:perf_hooks';
import { InternalError, Interrupted, isIngestError } from '../errors.js';
import type { Logger } from '../log.js';
import { referenceOf, type RecordKind } from '../records/kind.js';
import type { SenderTerms } from '../records/legacy/sender-terms.js';
import { validateRecord } from '../records/validate.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import { MessageIds } from './message-id.js';
import { RepeatFilter } from './repeat-filter.js';
import type { RoutingKeyFor } from './route.js';
import { validateBatch, type Verdict } from './validate-batch.js';

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
  /**
   * Lineage: told each record's own number (and input line) with its message id once the broker
   * confirmed it — once for an array batch, once per confirmed chunk of a streamed one. A streamed
   * batch that fails part-way has told some chunks already: a sink keeps them aside until
   * `ingest()` resolves. Without a sink nothing is computed for lineage.
   */
  readonly onLineage?: (confirmed: ConfirmedRecords) => Promise<void> | void;
}

/** Confirmed records of a batch, as parallel arrays in batch order (no object per record). */
export interface ConfirmedRecords {
  /** Index in the batch (0-based, as in the bulk response) of the first of these records. */
  readonly first: number;
  readonly messageIds: readonly string[];
  /** Each record's own number (`kind.referencePath`); `''` when it has none. */
  readonly references: readonly string[];
  /** Each record's first input line, where the decoder knows it (CSV); absent for JSON. */
  readonly lines?: ReadonlyArray<number | undefined>;
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
  /** The input line the record starts on (CSV: its first row), for lineage. */
  readonly line?: number;
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
  /** Called once every record passed validation, before anything is published (a file's durable state). */
  readonly onValidated?: (recordCount: number) => Promise<void>;
  /**
   * Stops the batch at the next safe point (a stop of the worker): the validation pass just ends;
   * the publish pass sends no new chunk, waits for the chunks in flight to be confirmed (their ids
   * go to `onConfirmed`), and throws `Interrupted` with the number of records confirmed.
   */
  readonly signal?: AbortSignal;
  /**
   * The first records an earlier, interrupted try of the same input had confirmed: counted and
   * given their ids (so later identical records are numbered as before), not published again.
   * Their ids are the sink's already; `onConfirmed` gets only those published now. @default 0
   */
  readonly resumeAfter?: number;
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
  /** Told how every batch ended (metrics); must not throw. */
  readonly observer?: (outcome: BatchOutcome) => void;
}

/** How one batch ended: `rejected` is the input's fault (4xx), `failed` is ours or the broker's. */
export interface BatchOutcome {
  readonly batch: Batch;
  readonly outcome: 'accepted' | 'rejected' | 'failed';
  /** Records in the batch (0 when a stream was refused before it was counted). */
  readonly records: number;
  readonly ms: number;
  readonly error?: unknown;
}

export type Ingest = (batch: Batch) => Promise<BulkResponse>;

export { MAX_LISTED_FAILURES } from './validate-batch.js';
/** A streamed batch is published in chunks of this many messages, each confirmed before the next. */
export const PUBLISH_CHUNK = 1000;

/**
 * The one flow every source goes through: validate every record (all-or-nothing), route,
 * give each record its stable id, publish, and report accepted only after the publisher
 * confirmed every message. Throws `ValidationFailed` (nothing published) or
 * `PublishFailed` (nothing reported accepted; a retry is safe: same records, same ids).
 */
export function createIngest({ publisher, routingKeyFor, observer }: IngestDependencies): Ingest {
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

  async function ingestArray(batch: ArrayBatch, accepted: Record<string, unknown>[]): Promise<Published> {
    const ids = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths);
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messages = accepted.map((record) => toMessage(batch, ids, record, timestamp, headers));
    await publisher.publish(messages);
    const messageIds = messages.map((message) => message.messageId);
    if (batch.onLineage) await batch.onLineage({ first: 0, messageIds, references: accepted.map((record) => referenceOf(batch.kind, record)) });
    return { count: messages.length, messageIds };
  }

  async function ingestStream(batch: StreamBatch, total: number, repeats: RepeatFilter): Promise<Published> {
    const { kind, businessId, signal } = batch;
    // Pass 2: publish in confirmed chunks; a failure part-way leaves only stable-id copies behind.
    const ids = new MessageIds(businessId, kind.name, batch.volatilePaths, (hex) => repeats.mayRepeat(hex));
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messageIds: string[] = [];
    const skip = batch.resumeAfter ?? 0;
    /** Records confirmed, an earlier try's included. */
    let published = skip;
    let position = 0;
    let chunk: OutboundMessage[] = [];
    // Lineage only: the chunk's references and input lines, beside its messages.
    const lineage = batch.onLineage;
    let references: string[] = [];
    let lines: Array<number | undefined> = [];
    // Two chunks in flight: the next one is built and sent while the broker confirms the previous,
    // so the worker's CPU and the broker's disk overlap. Ids are recorded strictly in order.
    let previous: Promise<void> = Promise.resolve();
    const flush = async () => {
      const sending = chunk;
      const sendingLineage = lineage && { references, lines };
      chunk = [];
      if (lineage) [references, lines] = [[], []];
      const confirmed = publisher.publish(sending);
      confirmed.catch(() => undefined); // reported below, after the chunk before it
      const earlier = previous;
      previous = (async () => {
        await earlier;
        await confirmed;
        const first = published;
        published += sending.length;
        const ids = sending.map((message) => message.messageId);
        if (batch.onConfirmed) await batch.onConfirmed(ids);
        else messageIds.push(...ids);
        if (lineage) await lineage({ first, messageIds: ids, ...sendingLineage! });
      })();
      previous.catch(() => undefined); // awaited by the next flush or below; never an unhandled rejection
      await earlier;
    };
    let interrupted = false;
    try {
      for await (const candidate of batch.open('publish')) {
        const result = validateRecord(kind, candidate.record, businessId);
        if (!result.ok) throw new InternalError({ detail: 'The input changed between validation and publishing; nothing more was published.' });
        position += 1;
        if (position <= skip) {
          ids.forRecord(result.record, Buffer.from(JSON.stringify(result.record))); // numbers repeats as the first try did
          if (position % PUBLISH_CHUNK === 0 && signal?.aborted) break;
          continue;
        }
        chunk.push(toMessage(batch, ids, result.record, timestamp, headers));
        if (lineage) {
          references.push(referenceOf(kind, result.record));
          lines.push(candidate.line);
        }
        if (chunk.length === PUBLISH_CHUNK) {
          // Checked once a chunk, before it is sent: a stop sends nothing more, and nothing half.
          if (signal?.aborted) break;
          await flush();
        }
      }
      interrupted = signal?.aborted === true && position < total;
      if (chunk.length > 0 && !interrupted) await flush();
    } finally {
      await previous; // nothing is left publishing behind the caller's back, also after an error
    }
    if (interrupted) throw new Interrupted(published);
    if (published !== total) throw new InternalError({ detail: 'The input changed between validation and publishing.' });
    return { count: published, messageIds };
  }

  /**
   * For a streamed batch, the validation pass also finds which records may repeat (so that the
   * publish pass numbers identical records without remembering every one): see `RepeatFilter`.
   */
  function repeatsOf(batch: Batch): { filter: RepeatFilter; onValid: (record: Record<string, unknown>) => void } | undefined {
    if ('records' in batch) return undefined;
    const filter = new RepeatFilter();
    const digests = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths);
    return {
      filter,
      onValid: (record) => {
        const digest = digests.digest(record, Buffer.from(JSON.stringify(record)));
        filter.add(digest, digest.toString('hex'));
      },
    };
  }

  return async function ingest(batch) {
    const started = performance.now();
    const observe = (outcome: BatchOutcome['outcome'], records: number, error?: unknown) => observer?.({ batch, outcome, records, ms: performance.now() - started, error });
    let verdict: Verdict;
    const repeats = repeatsOf(batch);
    try {
      verdict = await validateBatch(batch, repeats?.onValid);
    } catch (error) {
      // A stream that cannot be read (broken CSV is a 4xx; a disk error is not) fails here too.
      observe(isIngestError(error) && error.status < 500 ? 'rejected' : 'failed', 'records' in batch ? batch.records.length : 0, error);
      throw error;
    }
    if (!verdict.ok) {
      batch.log.info({ records: verdict.total, failing: verdict.failing }, 'batch rejected');
      observe('rejected', verdict.total, verdict.error);
      throw verdict.error;
    }
    let published: Published;
    try {
      if ('onValidated' in batch && batch.onValidated) await batch.onValidated(verdict.total);
      published = 'records' in batch ? await ingestArray(batch, verdict.accepted ?? []) : await ingestStream(batch, verdict.total, repeats!.filter);
    } catch (error) {
      observe('failed', verdict.total, error);
      throw error;
    }
    const { count, messageIds } = published;
    batch.log.info({ records: count, publisher: publisher.name, ms: Math.round(performance.now() - started) }, 'batch accepted');
    observe('accepted', count);
    return { success: true, recordCount: count, messageIds, correlationId: batch.correlationId };
  };
}

/** What a publish pass did: how many messages were confirmed, and their ids unless a sink took them. */
interface Published {
  readonly count: number;
  readonly messageIds: string[];
}

function messageHeaders(batch: Batch): Record<string, string> {
  return { 'business-id': batch.businessId, source: batch.source.type, 'source-name': batch.source.name };
}
