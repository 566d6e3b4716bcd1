import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, Options } from 'amqplib';
import type { DisabledBy } from '../vocabulary.js';
import type { EventsConfig } from './config.js';

/**
 * Events for the operator (`events.operatorWebhook`, docs/events.md "Operator webhook"): an
 * endpoint disabled, an event given up on after its schedule ran out. They are events like the
 * warehouse's, published to the delivery queue for a business no tenant can be (a colon is refused
 * in a business id), so the same machinery delivers them: signed, through the SSRF guard, with the
 * retry queues, the circuit and the dead-letter queue. Published with the dead letter that caused
 * them, before the original is acknowledged: neither is lost if the worker dies in between.
 */

/** The business id operator events are published for; the operator webhook is its one endpoint. */
export const OPERATOR_BUSINESS = 'warehouse-ingest:operator';

/** The endpoint an operator event is about (no URL: its host only, as in logs). */
export interface EndpointRef {
  /** The endpoint's id as retry copies carry it (`x-webhook-endpoint`). */
  readonly id: string;
  /** `webhook` or `file` (an outbound folder). */
  readonly kind: 'webhook' | 'file';
  /** host[:port], or the folder's store and path. */
  readonly host: string;
}

/** `endpoint.disabled`: an endpoint gets nothing more until it is enabled again. */
export interface EndpointDisabled {
  readonly businessId: string;
  readonly endpoint: EndpointRef;
  /** `gone`: it answered 410; `operator`: `events disable`. */
  readonly disabledBy: DisabledBy;
  /** The event whose attempt saw the 410, when there was one. */
  readonly eventId?: string;
  /** What the worker saw (`HTTP 410`) or what the operator said. */
  readonly reason?: string;
}

/** `message.attempt.exhausted`: an event dead-lettered after its last scheduled attempt failed. */
export interface AttemptsExhausted {
  readonly businessId: string;
  readonly endpoint: EndpointRef;
  readonly eventId: string;
  readonly eventType: string;
  readonly attempts: number;
  readonly lastFailure: string;
  /** Where the event waits now (`events replay` sends it again). */
  readonly deadLetterQueue: string;
}

/** A message ready to publish to the delivery queue (default exchange, routing key = its name). */
export interface OperatorMessage {
  readonly content: Buffer;
  readonly properties: Options.Publish & { readonly messageId: string; readonly type: string };
}

function operatorMessage(type: string, data: object, now: Date): OperatorMessage {
  return {
    content: Buffer.from(JSON.stringify(data)),
    properties: {
      messageId: randomUUID(),
      type,
      timestamp: Math.floor(now.getTime() / 1000),
      contentType: 'application/json',
      persistent: true,
      headers: { 'business-id': OPERATOR_BUSINESS },
    },
  };
}

export function endpointDisabledMessage(
  data: EndpointDisabled,
  now: Date = new Date(),
): OperatorMessage {
  return operatorMessage('endpoint.disabled', data, now);
}

export function attemptsExhaustedMessage(
  data: AttemptsExhausted,
  now: Date = new Date(),
): OperatorMessage {
  return operatorMessage('message.attempt.exhausted', data, now);
}

/** An operator event as handle.ts parks it: to the delivery queue, no headers of ours. */
export interface OperatorPark {
  readonly queue: string;
  readonly headers: Readonly<Record<string, never>>;
  readonly message: OperatorMessage;
}

/**
 * The operator event an endpoint's dead letter causes, as a park for the delivery queue (handle.ts
 * publishes it with the dead letter); undefined when no operator webhook is configured (or it is disabled), or when
 * the endpoint is the operator webhook itself — its own failures would feed it events about
 * themselves without end: they are logged and dead-lettered like any other.
 */
export function operatorPark(
  endpoints: ReadonlyMap<string, readonly unknown[]>,
  deliveryQueue: string,
  endpoint: EndpointRef & { readonly businessId: string },
  message: (endpoint: EndpointRef) => OperatorMessage,
): OperatorPark | undefined {
  if (endpoint.businessId === OPERATOR_BUSINESS || !endpoints.get(OPERATOR_BUSINESS)?.length)
    return undefined;
  const { id, kind, host } = endpoint;
  return { queue: deliveryQueue, headers: {}, message: message({ id, kind, host }) };
}

/**
 * Publishes one operator event (e.g. `events disable`'s `endpoint.disabled`) to the delivery queue
 * on a confirm channel, resolving once the broker confirmed it; false, and nothing published,
 * when no operator webhook is configured (or it is disabled). Every worker must share that
 * configuration: one without it dead-letters the event `unknown-business`.
 */
export async function publishOperatorEvent(
  channel: ConfirmChannel,
  events: Pick<EventsConfig, 'operatorWebhook' | 'queue'>,
  message: OperatorMessage,
): Promise<boolean> {
  if (!events.operatorWebhook?.enabled) return false;
  await new Promise<void>((resolve, reject) =>
    channel.sendToQueue(
      events.queue.name,
      message.content,
      { ...message.properties, persistent: true, mandatory: true },
      (error: unknown) => (error ? reject(error) : resolve()),
    ),
  );
  return true;
}
