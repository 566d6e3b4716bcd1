import type { MessageProperties } from 'amqplib';

/**
 * A warehouse event as it arrives on the events exchange (docs/events.md "Inbound contract"):
 * `messageId` = event id, `type` = event type, `timestamp` (seconds), header `business-id`,
 * optional headers `correlation-id` and `message-ids`; the body is the event's `data` object.
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
}

/** Why an event cannot be delivered at all; it goes to the dead-letter queue with this reason. */
export type MalformedReason =
  | 'missing-id'
  | 'missing-type'
  | 'missing-business'
  | 'not-json'
  | 'unknown-business';

export type ParsedEvent =
  | { readonly ok: true; readonly event: WarehouseEvent }
  | { readonly ok: false; readonly reason: MalformedReason; readonly detail: string };

const EVENT_TYPE = /^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/i;

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
  const seconds = typeof properties.timestamp === 'number' ? properties.timestamp : undefined;
  const correlationId = text(headers['correlation-id']);
  const rawIds = headers['message-ids'];
  const messageIds = Array.isArray(rawIds)
    ? rawIds.map(text).filter((v): v is string => v !== undefined)
    : undefined;
  return {
    ok: true,
    event: {
      id,
      type,
      businessId,
      // Arrival time in whole seconds when absent: the parked copies carry it as their timestamp.
      occurredAt: new Date((seconds ?? Math.floor(Date.now() / 1000)) * 1000),
      data: data as Record<string, unknown>,
      ...(correlationId ? { correlationId } : {}),
      ...(messageIds?.length ? { messageIds } : {}),
    },
  };
}

/** The JSON body POSTed to an endpoint (Standard Webhooks' `{ type, timestamp, data }` plus correlation). */
export function webhookBody(event: WarehouseEvent) {
  return {
    type: event.type,
    timestamp: event.occurredAt.toISOString(),
    businessId: event.businessId,
    data: event.data,
    ...(event.correlationId ? { correlationId: event.correlationId } : {}),
    ...(event.messageIds ? { messageIds: event.messageIds } : {}),
  };
}
