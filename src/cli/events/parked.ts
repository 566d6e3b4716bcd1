/**
 * Which events still wait on their retry schedule for an endpoint: `events recover` leaves them
 * to it, as Svix's recover takes only messages whose attempts are over. Resent now, each would
 * reach the endpoint twice (once resent, once at its next retry).
 */
import type { Channel, ChannelModel } from 'amqplib';
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig } from '../../events/config.js';
import { ENDPOINT_HEADER } from '../../events/retry.js';
import { eventsTopology } from '../../events/topology.js';
import { browseQueue } from './browse.js';

export interface ParkedOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  /** Endpoints as retry copies name them (`x-webhook-endpoint`). */
  readonly endpoints: ReadonlySet<string>;
}

const text = (value: unknown) =>
  Buffer.isBuffer(value) ? value.toString('utf8') : value === undefined ? '' : String(value);

/**
 * The ids of the events parked on a retry queue for one of `endpoints`. Looks without taking, as
 * `events status` does: each message fetched unacknowledged, the channel closed after, which puts
 * them all back with their expiry.
 */
export async function parkedFor(options: ParkedOptions): Promise<Set<string>> {
  const topology = eventsTopology(options.events);
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events recover',
  });
  const parked = new Set<string>();
  try {
    for (const queue of topology.retryQueues.values())
      for (const id of await parkedIn(connection, queue, options.endpoints)) parked.add(id);
    return parked;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

async function parkedIn(
  connection: ChannelModel,
  queue: string,
  endpoints: ReadonlySet<string>,
): Promise<string[]> {
  // A channel per queue: one not declared yet (no worker of this schedule ran) closes it.
  const channel: Channel = await connection.createChannel();
  channel.on('error', () => undefined);
  const ids: string[] = [];
  try {
    await channel.checkQueue(queue);
    for (const message of await browseQueue(channel, queue))
      if (endpoints.has(text(message.properties.headers?.[ENDPOINT_HEADER])))
        ids.push(text(message.properties.messageId));
    return ids;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return ids;
    throw error;
  } finally {
    await channel.close().catch(() => undefined);
  }
}
