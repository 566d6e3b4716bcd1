/**
 * `events resend` and `events recover` publish here: the events read back from the history, as
 * resend copies (events/resend.ts), on a connection of the command's own.
 */
import { confirmedChannel } from '../../broker/confirms.js';
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig } from '../../events/config.js';
import { type Resend, resendCopy } from '../../events/resend.js';
import { eventsTopology } from '../../events/topology.js';

export type { Resend } from '../../events/resend.js';

export interface ResendOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly resends: readonly Resend[];
  /** Called once each event is confirmed in the delivery queue. */
  readonly onResent?: (resend: Resend, done: number, total: number) => void;
}

/** Confirms awaited together per chunk (one at a time costs ~10×), progress reported per chunk. */
const CHUNK = 50;

/**
 * Publishes every resend to the delivery queue (the default exchange, as retries come back),
 * with confirms and `mandatory`: resolves once the broker holds them all; a delivery queue that
 * does not exist returns them and fails the call (`PublishFailed`).
 */
export async function resendEvents(options: ResendOptions): Promise<number> {
  const { queue } = eventsTopology(options.events);
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events resend',
  });
  try {
    const publishing = confirmedChannel(await connection.createConfirmChannel(), '', 30_000);
    const total = options.resends.length;
    for (let from = 0; from < total; from += CHUNK) {
      const chunk = options.resends.slice(from, from + CHUNK);
      await publishing.publishCopies(chunk.map((resend) => resendCopy(queue, resend)));
      for (const [i, resend] of chunk.entries()) options.onResent?.(resend, from + i + 1, total);
    }
    return total;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
