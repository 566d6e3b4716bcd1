import { connect, type Channel, type GetMessage } from 'amqplib';
import type { EventsConfig, WebhookConfig } from './config.js';
import {
  DEAD_AT_HEADER,
  DEAD_REASON_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
} from './retry.js';
import { endpointId } from './subscriptions.js';
import { eventsTopology } from './topology.js';

/** One endpoint as the broker sees it (the same for every worker). */
export interface EndpointStatus {
  readonly businessId: string;
  /** Host and port only; `(removed endpoint <id>)` for letters of an endpoint no longer configured. */
  readonly endpoint: string;
  readonly enabled: boolean;
  /** Events parked for a retry (or deferred) for this endpoint. */
  retrying: number;
  /** The soonest of their next attempts (ISO 8601). */
  nextAttemptAt?: string;
  dead: number;
  lastFailure?: string;
  lastFailureAt?: string;
}

export interface EventsStatus {
  /** Events waiting in the delivery queue (not yet taken by a worker). */
  readonly waiting: number;
  readonly endpoints: EndpointStatus[];
  /** Dead letters that belong to no endpoint (malformed events), by reason. */
  readonly malformed: Record<string, number>;
}

export interface StatusOptions {
  readonly url: string;
  readonly events: EventsConfig;
  readonly tenants: ReadonlyArray<{
    readonly businessId: string;
    readonly webhooks?: readonly WebhookConfig[] | undefined;
  }>;
}

const text = (value: unknown) =>
  Buffer.isBuffer(value) ? value.toString('utf8') : value === undefined ? undefined : String(value);

/**
 * Looks at (never takes) the retry and dead-letter queues: every message is fetched
 * unacknowledged and the channel closed afterwards, which puts them all back (a parked message
 * keeps its expiry). Counters of deliveries and "failing since" live in each worker's /metrics.
 */
async function browse(channel: Channel, queue: string): Promise<GetMessage[]> {
  const { messageCount } = await channel.checkQueue(queue);
  const messages: GetMessage[] = [];
  for (let i = 0; i < messageCount; i++) {
    const message = await channel.get(queue, { noAck: false });
    if (message === false) break;
    messages.push(message);
  }
  return messages;
}

export async function eventsStatus(options: StatusOptions): Promise<EventsStatus> {
  const topology = eventsTopology(options.events);
  const byId = new Map<string, EndpointStatus>();
  for (const tenant of options.tenants)
    for (const webhook of tenant.webhooks ?? [])
      byId.set(endpointId(tenant.businessId, webhook.url), {
        businessId: tenant.businessId,
        endpoint: new URL(webhook.url).host,
        enabled: webhook.enabled,
        retrying: 0,
        dead: 0,
      });
  const connection = await connect(options.url, {
    clientProperties: { connection_name: 'warehouse-ingest events status' },
  });
  try {
    const channel = await connection.createChannel();
    const { messageCount: waiting } = await channel.checkQueue(topology.queue);
    const malformed: Record<string, number> = {};
    const entry = (message: GetMessage): EndpointStatus | undefined => {
      const id = text(message.properties.headers?.[ENDPOINT_HEADER]);
      if (id === undefined) return undefined;
      let found = byId.get(id);
      if (!found) {
        found = {
          businessId: text(message.properties.headers?.['business-id']) ?? '?',
          endpoint: `(removed endpoint ${id})`,
          enabled: false,
          retrying: 0,
          dead: 0,
        };
        byId.set(id, found);
      }
      return found;
    };
    const noteFailure = (status: EndpointStatus, message: GetMessage, at: string | undefined) => {
      const failure = text(message.properties.headers?.[LAST_FAILURE_HEADER]);
      if (failure && (!status.lastFailureAt || (at ?? '') >= status.lastFailureAt)) {
        status.lastFailure = failure;
        if (at) status.lastFailureAt = at;
      }
    };
    for (const queue of topology.retryQueues.values())
      for (const message of await browse(channel, queue)) {
        const status = entry(message);
        if (!status) continue;
        status.retrying += 1;
        const next = text(message.properties.headers?.[NEXT_ATTEMPT_HEADER]);
        if (next && (!status.nextAttemptAt || next < status.nextAttemptAt))
          status.nextAttemptAt = next;
        noteFailure(status, message, undefined);
      }
    for (const message of await browse(channel, topology.deadQueue)) {
      const status = entry(message);
      if (!status) {
        const reason = text(message.properties.headers?.[DEAD_REASON_HEADER]) ?? 'unknown';
        malformed[reason] = (malformed[reason] ?? 0) + 1;
        continue;
      }
      status.dead += 1;
      noteFailure(status, message, text(message.properties.headers?.[DEAD_AT_HEADER]));
    }
    await channel.close(); // puts every browsed message back
    return { waiting, endpoints: [...byId.values()], malformed };
  } finally {
    await connection.close().catch(() => undefined);
  }
}
