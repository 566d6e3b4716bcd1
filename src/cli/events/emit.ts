import { randomUUID } from 'node:crypto';
import type { Message } from 'amqplib';
import { openBrokerConnection } from '../../broker/connection.js';
import { catalogEntry, checkEventData, EVENT_TYPES } from '../../events/catalog/index.js';
import type { EventsConfig } from '../../events/config.js';
import { assertEventsTopology, eventsTopology } from '../../events/topology.js';

export interface EmitOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly businessId: string;
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
  /** @default a random UUID */
  readonly id?: string;
  readonly correlationId?: string;
  readonly messageIds?: readonly string[];
}

/**
 * What keeps `events emit` from publishing this event: a type the event catalog does not list, or
 * data that does not match the type's schema (each field as `<path>: <message>`). A test event is
 * what a connector is written against, so it must be one the catalog documents.
 */
export function catalogProblem(type: string, data: unknown): string | undefined {
  if (catalogEntry(type)?.operator)
    return `"${type}" is an operator event: the service sends it to the operator webhook itself; it is not emitted for a business`;
  const check = checkEventData(type, data);
  if (check.ok) return undefined;
  if (check.unknownType)
    return `unknown event type "${type}": the event catalog (docs/event-catalog.md) lists ${Object.keys(EVENT_TYPES).join(', ')}`;
  return `the data is not ${type} data (docs/event-catalog.md): ${check.issues.join('; ')}`;
}

/**
 * Publishes one event exactly as the warehouse does (docs/events.md "Inbound contract") and
 * resolves once the broker confirmed it and routed it to a queue. Declares the topology first,
 * so the event waits in the delivery queue even when no worker runs yet.
 */
export async function emitEvent(options: EmitOptions): Promise<{ id: string }> {
  const id = options.id ?? randomUUID();
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events emit',
  });
  try {
    const channel = await connection.createConfirmChannel();
    const topology = eventsTopology(options.events);
    await assertEventsTopology(channel, topology, options.events.queue.type, () =>
      connection.createChannel(),
    );
    let returned: string | undefined;
    channel.on('return', (message: Message) => {
      returned = `unroutable (${(message.fields as { replyText?: string }).replyText ?? 'no route'})`;
    });
    const headers: Record<string, unknown> = { 'business-id': options.businessId };
    if (options.correlationId) headers['correlation-id'] = options.correlationId;
    if (options.messageIds?.length) headers['message-ids'] = [...options.messageIds];
    await new Promise<void>((resolve, reject) =>
      channel.publish(
        topology.exchange,
        `${options.type}.${options.businessId}`,
        Buffer.from(JSON.stringify(options.data)),
        {
          persistent: true,
          mandatory: true,
          messageId: id,
          type: options.type,
          timestamp: Math.floor(Date.now() / 1000),
          contentType: 'application/json',
          headers,
        },
        (error: unknown) => (error ? reject(error) : resolve()),
      ),
    );
    // A return arrives before the ack (RabbitMQ), so it is known by now.
    if (returned) throw new Error(`The event was not routed to any queue: ${returned}`);
    return { id };
  } finally {
    await connection.close().catch(() => undefined);
  }
}
