import type { GetMessage } from 'amqplib';
import { confirmedChannel } from '../../broker/confirms.js';
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig } from '../../events/config.js';
import {
  ATTEMPTS_HEADER,
  DEAD_AT_HEADER,
  DEAD_REASON_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
} from '../../events/retry.js';
import { eventsTopology } from '../../events/topology.js';
import type { WorkerReport } from '../../events/worker-report.js';
import { untilReturned, workerReports } from './status.js';

export interface ReplaySelection {
  readonly businessId?: string;
  readonly id?: string;
  /** Only events dead-lettered at or after this time (ms since the epoch). */
  readonly since?: number;
}

export interface ReplayedEvent {
  readonly id: string;
  readonly type: string;
  readonly businessId: string;
  /** Why it had been dead-lettered. */
  readonly reason: string;
}

/** Dead letters left in place because their endpoint would send them straight back. */
export interface HeldBack {
  /** The endpoint's id (`webhook-endpoint` header). */
  readonly endpoint: string;
  readonly businessId: string;
  /** Why, as a running worker reported it: backed off until a time, probing, or disabled by a 410. */
  readonly why: string;
  readonly events: number;
}

export interface ReplayResult {
  readonly replayed: ReplayedEvent[];
  readonly heldBack: HeldBack[];
}

export interface ReplayOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly selection: ReplaySelection;
  /**
   * Replay also the letters of endpoints a running worker reports backed off or disabled (they
   * would walk through their retry steps without an attempt, or go straight back to dead).
   * @default false
   */
  readonly force?: boolean;
  /** Called after each event is back in the delivery queue; `total` is the dead-letter queue's size at the start. */
  readonly onReplayed?: (event: ReplayedEvent, done: number, total: number) => void;
}

const text = (value: unknown) =>
  Buffer.isBuffer(value) ? value.toString('utf8') : value === undefined ? '' : String(value);

function selected(message: GetMessage, selection: ReplaySelection): boolean {
  const { properties } = message;
  if (selection.id !== undefined && text(properties.messageId) !== selection.id) return false;
  if (
    selection.businessId !== undefined &&
    text(properties.headers?.['business-id']) !== selection.businessId
  )
    return false;
  if (selection.since !== undefined) {
    const at = Date.parse(text(properties.headers?.[DEAD_AT_HEADER]));
    if (!(at >= selection.since)) return false;
  }
  return true;
}

/**
 * Moves the selected dead letters back to the delivery queue, attempts reset: each is
 * republished with confirms, then acknowledged on the dead-letter queue, so a crash midway
 * duplicates at worst and never loses one. A letter for one endpoint stays for that endpoint,
 * except one dead-lettered because its endpoint was no longer configured: it is matched to the
 * business's subscriptions afresh (its endpoint's URL or id changed, or it was removed).
 * Looks at most at the letters present at the start: one that fails again and comes back during
 * the replay is left for the next replay, not taken round in a loop. The others stay in place.
 *
 * A letter whose endpoint a running worker reports backed off (its circuit open, or a probe
 * under way) or disabled by a 410 stays too, unless `force`: replayed now it would walk through
 * its retry steps without a single attempt, or go straight back to dead. The result says which
 * endpoints held letters back, and why.
 */
export async function replayDeadLetters(options: ReplayOptions): Promise<ReplayResult> {
  const topology = eventsTopology(options.events);
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events replay',
  });
  try {
    const held = options.force
      ? new Map<string, string>()
      : await unavailableEndpoints(connection, topology.queue);
    const heldBack = new Map<string, HeldBack>();
    const channel = await connection.createConfirmChannel();
    const publishing = confirmedChannel(channel, '', 30_000);
    const { messageCount: total } = await channel.checkQueue(topology.deadQueue);
    const replayed: ReplayedEvent[] = [];
    // Non-selected letters stay unacknowledged until the channel closes, so `get` moves past them.
    for (let looked = 0; looked < total; looked++) {
      const message = await channel.get(topology.deadQueue, { noAck: false });
      if (message === false) break;
      if (!selected(message, options.selection)) continue;
      const { properties } = message;
      const endpoint = text(properties.headers?.[ENDPOINT_HEADER]);
      const why = held.get(endpoint);
      // A letter of a removed endpoint is matched afresh: whatever held its old id does not apply.
      if (why && text(properties.headers?.[DEAD_REASON_HEADER]) !== 'endpoint-removed') {
        const businessId = text(properties.headers?.['business-id']);
        const known = heldBack.get(endpoint);
        heldBack.set(endpoint, { endpoint, businessId, why, events: (known?.events ?? 0) + 1 });
        continue; // left unacknowledged: back in place when the channel closes
      }
      const headers = { ...properties.headers };
      const forget = [
        ATTEMPTS_HEADER,
        DEAD_AT_HEADER,
        DEAD_REASON_HEADER,
        LAST_FAILURE_HEADER,
        NEXT_ATTEMPT_HEADER,
        'x-death',
      ];
      if (text(properties.headers?.[DEAD_REASON_HEADER]) === 'endpoint-removed')
        forget.push(ENDPOINT_HEADER);
      for (const key of forget) delete headers[key];
      // With `mandatory`: a delivery queue that is gone returns the copy, and the letter stays.
      await publishing.publishCopies([
        {
          messageId: text(properties.messageId),
          routingKey: topology.queue,
          body: message.content,
          properties: {
            messageId: properties.messageId,
            type: properties.type,
            timestamp: properties.timestamp,
            contentType: properties.contentType,
            headers,
          },
        },
      ]);
      channel.ack(message);
      const event: ReplayedEvent = {
        id: text(properties.messageId),
        type: text(properties.type),
        businessId: text(properties.headers?.['business-id']),
        reason: text(properties.headers?.[DEAD_REASON_HEADER]),
      };
      replayed.push(event);
      options.onReplayed?.(event, replayed.length, total);
    }
    await channel.close(); // puts back every letter looked at and left
    // Counted again before we return, so a replay (or status) right after finds them all.
    await untilReturned(connection, topology.deadQueue, total - replayed.length);
    return { replayed, heldBack: [...heldBack.values()] };
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * Endpoints a running worker reports as unable to take an event now, with why: backed off until a
 * time (or probing), or disabled (after a 410 or by an operator, until `events enable`).
 */
async function unavailableEndpoints(
  connection: Awaited<ReturnType<typeof openBrokerConnection>>,
  queue: string,
  now = Date.now(),
): Promise<Map<string, string>> {
  const channel = await connection.createChannel();
  let reports: WorkerReport[];
  try {
    reports = await workerReports(channel, queue);
  } finally {
    await channel.close().catch(() => undefined); // puts the reports back
  }
  const held = new Map<string, string>();
  for (const report of reports)
    for (const [id, figures] of Object.entries(report.endpoints)) {
      if (figures.disabled)
        held.set(
          id,
          figures.disabledBy === 'operator'
            ? `disabled by an operator (events enable to deliver again)`
            : `disabled after a 410 in worker ${report.worker} (events enable once the receiver is fixed)`,
        );
      else if (figures.backedOffUntil && Date.parse(figures.backedOffUntil) > now && !held.has(id))
        held.set(id, `backed off until ${figures.backedOffUntil} in worker ${report.worker}`);
      else if (figures.probing && !held.has(id))
        held.set(id, `backed off in worker ${report.worker}, a probe under way`);
    }
  return held;
}
