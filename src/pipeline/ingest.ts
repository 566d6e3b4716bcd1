import { performance } from 'node:perf_hooks';
import { MalformedBody, ValidationFailed, type RecordErrors } from '../errors.js';
import type { Logger } from '../log.js';
import type { RecordKind } from '../records/kind.js';
import type { SenderTerms } from '../records/legacy/sender-terms.js';
import { validateRecord } from '../records/validate.js';
import type { OutboundMessage, Publisher } from '../publish/publisher.js';
import { MessageIds } from './message-id.js';
import type { RoutingKeyFor } from './route.js';

/** Where a batch came from: written on every message and every log line of the batch. */
export interface BatchSource {
  /** `http`, `local`, `sftp`, `s3`, `reprocess`. */
  readonly type: string;
  /** The endpoint path, or the pipeline name for a file drop. */
  readonly name: string;
}

export interface Batch {
  readonly kind: RecordKind;
  /** The authenticated business (HTTP) or the business a pipeline acts for (file drop). */
  readonly businessId: string;
  /** Candidate v2 records, as decoded (or converted from a legacy shape). */
  readonly records: readonly unknown[];
  readonly correlationId: string;
  readonly source: BatchSource;
  /** For converted (legacy) batches: puts errors in the sender's terms (legacy path, CSV line and column). */
  readonly senderTerms?: SenderTerms;
  /** Logger already carrying the batch's context: correlation id, business, kind, and the file for a drop. */
  readonly log: Logger;
}

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

/**
 * The one flow every source goes through: validate every record (all-or-nothing), route,
 * give each record its stable id, publish, and report accepted only after the publisher
 * confirmed every message. Throws `ValidationFailed` (nothing published) or
 * `PublishFailed` (nothing reported accepted; a retry is safe).
 */
export function createIngest({ publisher, routingKeyFor }: IngestDependencies): Ingest {
  return async function ingest(batch) {
    const started = performance.now();
    const { kind, businessId, records, correlationId, source, log, senderTerms } = batch;
    if (records.length === 0) {
      throw new MalformedBody({ detail: 'The batch holds no records: send a JSON array with at least one record.' });
    }

    const accepted: Record<string, unknown>[] = new Array(records.length);
    const failures: RecordErrors[] = [];
    for (let index = 0; index < records.length; index++) {
      const result = validateRecord(kind, records[index], businessId);
      if (senderTerms && (!result.ok || senderTerms.earlyErrors(index))) {
        failures.push({ index, errors: senderTerms.explain(index, result.ok ? [] : result.errors) });
      } else if (result.ok) accepted[index] = result.record;
      else failures.push({ index, errors: result.errors });
    }
    if (failures.length > 0) {
      log.info({ records: records.length, failing: failures.length }, 'batch rejected');
      throw new ValidationFailed({
        detail: `${failures.length} of ${records.length} record(s) failed validation; no record was accepted.`,
        errors: failures,
      });
    }

    const ids = new MessageIds(businessId, kind.name);
    const timestamp = Date.now();
    const headers = { 'business-id': businessId, source: source.type, 'source-name': source.name };
    const messages: OutboundMessage[] = new Array(accepted.length);
    const messageIds: string[] = new Array(accepted.length);
    for (let index = 0; index < accepted.length; index++) {
      const record = accepted[index]!;
      const body = Buffer.from(JSON.stringify(record));
      const messageId = ids.next(body);
      messageIds[index] = messageId;
      messages[index] = {
        messageId,
        routingKey: routingKeyFor(kind.name, businessId, record),
        body,
        type: kind.name,
        correlationId,
        timestamp,
        headers,
      };
    }

    await publisher.publish(messages);
    log.info(
      { records: messages.length, publisher: publisher.name, ms: Math.round(performance.now() - started) },
      'batch accepted',
    );
    return { success: true, recordCount: messages.length, messageIds, correlationId };
  };
}
