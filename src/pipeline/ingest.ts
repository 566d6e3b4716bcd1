import { performance } from 'node:perf_hooks';
import { Interrupted, isIngestError } from '../errors.js';
import { referenceOf } from '../records/kind.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import { MessageIds } from './message-id.js';
import { MessageSpool } from './message-spool.js';
import { RepeatFilter } from './repeat-filter.js';
import { routableCheck, type RoutingKeyFor } from './route.js';
import { validateBatch, type OnValid, type Verdict } from './validate-batch.js';
import type {
  ArrayBatch,
  Batch,
  BatchOutcome,
  BulkResponse,
  Ingest,
  IngestOutcome,
  StreamBatch,
} from './batch.js';

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
}

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
  function toMessage(
    batch: Batch,
    ids: MessageIds,
    record: Record<string, unknown>,
    timestamp: number,
    headers: Record<string, string>,
  ): OutboundMessage {
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

  async function ingestArray(
    batch: ArrayBatch,
    accepted: Record<string, unknown>[],
  ): Promise<Published> {
    const ids = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths);
    const timestamp = Date.now();
    const headers = messageHeaders(batch);
    const messages = accepted.map((record) => toMessage(batch, ids, record, timestamp, headers));
    await publisher.publish(messages);
    const messageIds = messages.map((message) => message.messageId);
    if (batch.onLineage)
      await batch.onLineage({
        first: 0,
        messageIds,
        references: accepted.map((record) => referenceOf(batch.kind, record)),
      });
    return { count: messages.length, messageIds };
  }

  async function ingestStream(batch: StreamBatch, prepared: PreparedStream): Promise<Published> {
    const { kind, businessId, signal } = batch;
    const { repeats, spool } = prepared;
    // Pass 2: publish the spooled messages in confirmed chunks; a failure part-way leaves only stable-id copies behind.
    const ids = new MessageIds(businessId, kind.name, batch.volatilePaths, (hex) =>
      repeats.mayRepeat(hex),
    );
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
    // The skipped records, told to `onSkipped` a chunk at a time.
    let skipped: { messageIds: string[]; references: string[]; lines: Array<number | undefined> } =
      { messageIds: [], references: [], lines: [] };
    const tellSkipped = async () => {
      const told = skipped;
      skipped = { messageIds: [], references: [], lines: [] };
      if (batch.onSkipped && told.messageIds.length > 0)
        await batch.onSkipped({ first: position - told.messageIds.length, ...told });
    };
    let interrupted = false;
    try {
      for await (const message of spool.read()) {
        position += 1;
        // Numbered as the first try did (skipped records too), so later identical records keep their ids.
        const messageId = ids.forDigest(message.digest);
        if (position <= skip) {
          if (batch.onSkipped) {
            skipped.messageIds.push(messageId);
            skipped.references.push(message.reference);
            skipped.lines.push(message.line);
          }
          if (position % PUBLISH_CHUNK === 0 || position === skip) await tellSkipped();
          if (position % PUBLISH_CHUNK === 0 && signal?.aborted) break;
          continue;
        }
        chunk.push({
          messageId,
          routingKey: message.routingKey,
          body: message.body,
          type: kind.name,
          correlationId: batch.correlationId,
          timestamp,
          headers,
        });
        if (lineage) {
          references.push(message.reference);
          lines.push(message.line);
        }
        if (chunk.length === PUBLISH_CHUNK) {
          // Checked once a chunk, before it is sent: a stop sends nothing more, and nothing half.
          if (signal?.aborted) break;
          await batch.beforeChunk?.();
          await flush();
        }
      }
      interrupted = signal?.aborted === true && position < spool.size;
      if (chunk.length > 0 && !interrupted) {
        await batch.beforeChunk?.();
        await flush();
      }
    } finally {
      await previous; // nothing is left publishing behind the caller's back, also after an error
    }
    if (interrupted) throw new Interrupted(published);
    return { count: published, messageIds };
  }

  /**
   * What the validation pass of a streamed batch keeps for the publish pass: which records may
   * repeat (so that identical records are numbered without remembering every one: see
   * `RepeatFilter`), and every valid record as its ready message (`MessageSpool`), so the publish
   * pass neither decodes nor validates again.
   */
  function prepareStream(batch: StreamBatch): PreparedStream {
    const repeats = new RepeatFilter();
    const spool = new MessageSpool(batch.spoolFile);
    const digests = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths);
    const { kind, businessId } = batch;
    const withReferences = batch.onLineage !== undefined || batch.onSkipped !== undefined;
    return {
      repeats,
      spool,
      onValid: (record, line) => {
        const body = JSON.stringify(record);
        const digest = digests.digest(record, body);
        repeats.add(digest);
        return spool.append(
          digest,
          routingKeyFor(kind.name, businessId, record),
          withReferences ? referenceOf(kind, record) : '',
          line,
          body,
        );
      },
    };
  }

  async function validateAndPublish(
    batch: Batch,
    prepared: PreparedStream | undefined,
    observe: (outcome: BatchOutcome['outcome'], records: number, error?: unknown) => void,
    started: number,
  ): Promise<BulkResponse> {
    let verdict: Verdict;
    let validatedAt = started;
    try {
      // A record whose routing key AMQP cannot carry is refused with the rest of the validation.
      const routable = routableCheck(routingKeyFor, batch.kind.name, batch.businessId);
      verdict = await validateBatch(batch, prepared?.onValid, routable);
      await prepared?.spool.finish();
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
          ? await ingestArray(batch, verdict.accepted ?? [])
          : await ingestStream(batch, prepared!);
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

  return async function ingest(batch) {
    const started = performance.now();
    const observe = (outcome: BatchOutcome['outcome'], records: number, error?: unknown) =>
      observer?.({ batch, outcome, records, ms: performance.now() - started, error });
    const prepared = batch.mode === 'stream' ? prepareStream(batch) : undefined;
    try {
      return await validateAndPublish(batch, prepared, observe, started);
    } finally {
      await prepared?.spool.remove();
    }
  };
}

/** What the validation pass of a streamed batch leaves for the publish pass (`prepareStream`). */
interface PreparedStream {
  readonly repeats: RepeatFilter;
  readonly spool: MessageSpool;
  readonly onValid: OnValid;
}

/** What a publish pass did: how many messages were confirmed, and their ids unless a sink took them. */
interface Published {
  readonly count: number;
  readonly messageIds: string[];
}

function messageHeaders(batch: Batch): Record<string, string> {
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
