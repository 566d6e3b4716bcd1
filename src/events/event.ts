import type { MessageProperties } from 'amqplib';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../decode/json.js';
import { parseTraceparent, type ParentTrace } from '../tracing.js';
import type { MalformedReason } from '../vocabulary.js';

/**
 * A warehouse event as it arrives on the events exchange (docs/events.md "Inbound contract"):
 * `messageId` = event id, `type` = event type, `timestamp` (seconds), header `business-id`,
 * optional headers `correlation-id`, `message-ids` and `traceparent`/`tracestate` (W3C); the body
 * is the event's `data` object.
 */
export interface WarehouseEvent {
  readonly id: string;
  readonly type: string;
  readonly businessId: string;
  readonly occurredAt: Date;
  readonly data: Readonly<Record<string, unknown>>;
  /** The ingest batch this event answers, if any. */
  readonly correlationId?: string;
  /** Message ids of the ingested records this event answers. */
  readonly messageIds?: readonly string[];
  /** The trace the warehouse sent it in (`traceparent`); each webhook attempt continues it. */
  readonly trace?: ParentTrace;
  /**
   * The webhook body (`webhookBody`) as JSON text, rendered once while parsing: every attempt and
   * every endpoint sends these bytes, and an event that cannot be rendered is refused there, before
   * any endpoint is tried (a failure of the event's own, never an endpoint's).
   */
  readonly body: string;
}

export type ParsedEvent =
  | { readonly ok: true; readonly event: WarehouseEvent }
  | { readonly ok: false; readonly reason: MalformedReason; readonly detail: string };

export const EVENT_TYPE = /^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/i;
/** The id becomes the `webhook-id` header and part of a file name: visible ASCII, bounded. */
export const EVENT_ID = /^[\x21-\x7e]{1,256}$/;
/** Seconds of 9999-12-31T23:59:59Z: a larger "seconds" value is milli- or microseconds. */
const LAST_SECOND = 253_402_300_799;

function text(value: unknown): string | undefined {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

export function parseEvent(
  content: Buffer,
  properties: MessageProperties,
  isKnownBusiness: (businessId: string) => boolean,
): ParsedEvent {
  const headers = properties.headers ?? {};
  const id = text(properties.messageId);
  if (!id) return { ok: false, reason: 'missing-id', detail: 'No messageId property' };
  if (!EVENT_ID.test(id))
    return {
      ok: false,
      reason: 'invalid-id',
      detail: 'messageId must be 1 to 256 visible ASCII characters (no space or control character)',
    };
  const type = text(properties.type);
  if (!type || !EVENT_TYPE.test(type))
    return {
      ok: false,
      reason: 'missing-type',
      detail: 'No type property of the form kind.action',
    };
  const businessId = text(headers['business-id']);
  if (!businessId)
    return { ok: false, reason: 'missing-business', detail: 'No business-id header' };
  const seconds = properties.timestamp;
  if (
    seconds !== undefined &&
    (typeof seconds !== 'number' ||
      !Number.isInteger(seconds) ||
      seconds < 0 ||
      seconds > LAST_SECOND)
  )
    return {
      ok: false,
      reason: 'invalid-timestamp',
      detail: `timestamp ${String(seconds).slice(0, 40)} is not POSIX seconds between 1970 and 9999 (milliseconds or microseconds?)`,
    };
  // Parsing is iterative, but rendering the body again is recursive: a deep body would overflow it.
  if (nestsDeeperThan(content, MAX_JSON_DEPTH))
    return {
      ok: false,
      reason: 'too-deep',
      detail: `Body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    };
  let data: unknown;
  try {
    data = JSON.parse(content.toString('utf8'));
  } catch {
    return { ok: false, reason: 'not-json', detail: 'Body is not JSON' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { ok: false, reason: 'not-json', detail: 'Body is not a JSON object' };
  if (!isKnownBusiness(businessId))
    return {
      ok: false,
      reason: 'unknown-business',
      detail: `No tenant has business id ${businessId}`,
    };
  const correlationId = text(headers['correlation-id']);
  const rawIds = headers['message-ids'];
  const messageIds = Array.isArray(rawIds)
    ? rawIds.map(text).filter((v): v is string => v !== undefined)
    : undefined;
  // An invalid traceparent is ignored, as on HTTP: the attempt begins a trace of its own.
  const trace = parseTraceparent(text(headers.traceparent), text(headers.tracestate));
  const fields = {
    id,
    type,
    businessId,
    // Arrival time in whole seconds when absent: the parked copies carry it as their timestamp.
    occurredAt: new Date((seconds ?? Math.floor(Date.now() / 1000)) * 1000),
    data: data as Record<string, unknown>,
    ...(correlationId ? { correlationId } : {}),
    ...(messageIds?.length ? { messageIds } : {}),
    ...(trace ? { trace } : {}),
  };
  return { ok: true, event: warehouseEvent(fields) };
}

/** An event from its fields, its webhook body rendered (a body nesting too deep throws here). */
export function warehouseEvent(fields: Omit<WarehouseEvent, 'body'>): WarehouseEvent {
  return { ...fields, body: JSON.stringify(webhookBody(fields)) };
}

/** The JSON body POSTed to an endpoint (Standard Webhooks' `{ type, timestamp, data }` plus correlation). */
export function webhookBody(event: Omit<WarehouseEvent, 'body'>) {
  return {
    type: event.type,
    timestamp: event.occurredAt.toISOString(),
    businessId: event.businessId,
    data: event.data,
    ...(event.correlationId ? { correlationId: event.correlationId } : {}),
    ...(event.messageIds ? { messageIds: event.messageIds } : {}),
  };
}
