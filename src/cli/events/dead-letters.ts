/**
 * The events' dead letters as a list, for the portal's operator page: looked at, never taken
 * (browse.ts), the newest first. `events status` counts the same queue; `replayDeadLetters`
 * (replay.ts) moves them back.
 */
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig } from '../../events/config.js';
import {
  ATTEMPTS_HEADER,
  type DeadLetter,
  DEAD_AT_HEADER,
  DEAD_REASON_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
} from '../../events/retry.js';
import { eventsTopology } from '../../events/topology.js';
import { browseQueue } from './browse.js';
import { untilReturned } from './status.js';

export interface DeadLetterOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  /** Letters looked at, at most. @default 500 */
  readonly max?: number;
}

const text = (value: unknown) =>
  Buffer.isBuffer(value) ? value.toString('utf8') : value === undefined ? '' : String(value);

export async function listDeadLetters(options: DeadLetterOptions): Promise<DeadLetter[]> {
  const { deadQueue } = eventsTopology(options.events);
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest portal dead letters',
  });
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    let letters: DeadLetter[] = [];
    try {
      await channel.checkQueue(deadQueue);
      letters = (await browseQueue(channel, deadQueue, options.max ?? 500)).map(
        ({ properties }) => {
          const headers = properties.headers ?? {};
          return {
            id: text(properties.messageId),
            type: text(properties.type),
            businessId: text(headers['business-id']),
            endpoint: text(headers[ENDPOINT_HEADER]),
            reason: text(headers[DEAD_REASON_HEADER]),
            deadAt: text(headers[DEAD_AT_HEADER]),
            attempts: Number(text(headers[ATTEMPTS_HEADER])) || 0,
            lastFailure: text(headers[LAST_FAILURE_HEADER]),
          };
        },
      );
    } catch (error) {
      // No worker has declared the queue yet: nothing is dead.
      if ((error as { code?: number }).code !== 404) throw error;
    } finally {
      await channel.close().catch(() => undefined); // puts every letter back
    }
    await untilReturned(connection, deadQueue, letters.length);
    return letters.sort((a, b) => b.deadAt.localeCompare(a.deadAt));
  } finally {
    await connection.close().catch(() => undefined);
  }
}
