import { Interrupted } from '../errors.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import { referenceOf, type RecordKind } from '../records/kind.js';
import type { ConfirmedRecords, StreamBatch } from './batch.js';
import { MessageIds } from './message-id.js';
import { MessageSpool, type SpooledMessages } from './message-spool.js';
import { RepeatFilter, type Repeats } from './repeat-filter.js';
import type { RoutingKeyFor } from './route.js';
import type { OnValid } from './validate-batch.js';

/** A streamed batch is published in chunks of this many messages, each confirmed before the next. */
export const PUBLISH_CHUNK = 1000;

/** What the validation pass of a streamed batch leaves for the publish pass. */
export interface PreparedStream {
  readonly repeats: Repeats;
  readonly spool: SpooledMessages;
}

/** What the validation pass fills (`prepareStream`): told each valid record by `onValid`. */
export interface StreamSpooler extends PreparedStream {
  readonly repeats: RepeatFilter;
  readonly spool: MessageSpool;
  readonly onValid: OnValid;
}

/** What spooling a streamed batch's valid records needs to know of the batch. */
export interface SpoolPlan {
  readonly kind: RecordKind;
  readonly businessId: string;
  readonly volatilePaths?: readonly string[] | undefined;
  /** Keep each record's own number (the batch keeps lineage, or skips records confirmed before). */
  readonly withReferences: boolean;
  readonly spoolFile?: string | undefined;
  /** @default IN_MEMORY_BYTES */
  readonly inMemoryUpTo?: number;
}

/** The spool plan of a streamed batch; `keepsRecords`: its confirmed records go to `BatchEnds`. */
export function spoolPlan(batch: StreamBatch, keepsRecords = false): SpoolPlan {
  return {
    kind: batch.kind,
    businessId: batch.businessId,
    volatilePaths: batch.volatilePaths,
    withReferences:
      keepsRecords || batch.onConfirmed !== undefined || batch.onSkipped !== undefined,
    spoolFile: batch.spoolFile,
  };
}

/** What a publish pass did: how many messages were confirmed, and their ids unless a sink took them. */
export interface Published {
  readonly count: number;
  readonly messageIds: string[];
}

/** Where a streamed batch's confirmed (and skipped) records go besides the batch's own sinks. */
export type RecordsSink = (records: ConfirmedRecords) => void;

/**
 * The publish pass of a streamed batch: the spooled messages, in confirmed chunks of
 * `PUBLISH_CHUNK`, two in flight; after `resumeAfter` records an earlier try confirmed. A failure
 * part-way leaves only stable-id copies behind; a stop (`signal`) sends no new chunk, waits for
 * those in flight and throws `Interrupted` with the number confirmed. Each confirmed chunk goes
 * to `batch.onConfirmed` and `sink`; skipped ones to `batch.onSkipped` and `sink`.
 */
export async function publishStream(
  batch: StreamBatch,
  prepared: PreparedStream,
  publisher: Publisher,
  headers: Record<string, string>,
  sink?: RecordsSink,
): Promise<Published> {
  const { kind, businessId, signal } = batch;
  const { repeats, spool } = prepared;
  const ids = new MessageIds(businessId, kind.name, batch.volatilePaths, (hex) =>
    repeats.mayRepeat(hex),
  );
  const timestamp = Date.now();
  const messageIds: string[] = [];
  const skip = batch.resumeAfter ?? 0;
  /** Records confirmed, an earlier try's included. */
  let published = skip;
  let position = 0;
  let chunk: OutboundMessage[] = [];
  // Lineage only: the chunk's references and input lines, beside its messages.
  const { onConfirmed } = batch;
  const lineage = onConfirmed !== undefined || sink !== undefined;
  let references: string[] = [];
  let lines: Array<number | undefined> = [];
  // Two chunks in flight: the next one is built and sent while the broker confirms the previous,
  // so the worker's CPU and the broker's disk overlap. Ids are recorded strictly in order.
  let previous: Promise<void> = Promise.resolve();
  const flush = async () => {
    const sending = chunk;
    const sendingLineage = { references, lines };
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
      if (!onConfirmed) messageIds.push(...ids);
      if (!lineage) return;
      const records: ConfirmedRecords = { first, messageIds: ids, ...sendingLineage };
      sink?.(records);
      await onConfirmed?.(records);
    })();
    previous.catch(() => undefined); // awaited by the next flush or below; never an unhandled rejection
    await earlier;
  };
  // The skipped records, told to `onSkipped` a chunk at a time.
  let skipped: { messageIds: string[]; references: string[]; lines: Array<number | undefined> } = {
    messageIds: [],
    references: [],
    lines: [],
  };
  const tellsSkipped = batch.onSkipped !== undefined || sink !== undefined;
  const tellSkipped = async () => {
    const told = skipped;
    skipped = { messageIds: [], references: [], lines: [] };
    if (!tellsSkipped || told.messageIds.length === 0) return;
    const records: ConfirmedRecords = { first: position - told.messageIds.length, ...told };
    sink?.(records);
    await batch.onSkipped?.(records);
  };
  let interrupted = false;
  try {
    for await (const message of spool.read()) {
      position += 1;
      // Numbered as the first try did (skipped records too), so later identical records keep their ids.
      const messageId = ids.forDigest(message.digest);
      if (position <= skip) {
        if (tellsSkipped) {
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
export function prepareStream(plan: SpoolPlan, routingKeyFor: RoutingKeyFor): StreamSpooler {
  const repeats = new RepeatFilter();
  const spool = new MessageSpool(plan.spoolFile, plan.inMemoryUpTo);
  const digests = new MessageIds(plan.businessId, plan.kind.name, plan.volatilePaths);
  const { kind, businessId, withReferences } = plan;
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
