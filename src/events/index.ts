import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { EventsConfig } from './config.js';
import { createEventsConsumer, type EventsConsumer } from './consumer.js';
import { createEventsMetrics } from './metrics.js';
import { fileDestinations, type OutboundDrop } from './destinations/file/index.js';
import type { EventsHistory } from './shared-state.js';
import type { Endpoint, SubscriptionSource } from './subscriptions.js';

export interface EventsSource extends SubscriptionSource {
  readonly events: EventsConfig;
  readonly broker: {
    readonly url?: string | readonly string[] | undefined;
    readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  };
}

/**
 * The outbound half as `serve` runs it, given the endpoints `resolveEndpoints` made at start-up
 * (before anything connects) and the opened drops (a pipeline declaring `events` gets its
 * outbound folder), and the history when it is on (events, attempts, endpoint states).
 * Undefined without a broker: events arrive only through RabbitMQ.
 */
export function openEvents(
  config: EventsSource,
  webhooks: ReadonlyMap<string, readonly Endpoint[]>,
  log: Logger,
  registry: Registry,
  drops: readonly OutboundDrop[] = [],
  history?: EventsHistory,
): EventsConsumer | undefined {
  if (!config.broker.url) {
    log.info('events: no broker configured (AMQP_URL); webhooks are not delivered');
    return undefined;
  }
  const consumer = createEventsConsumer(
    {
      url: config.broker.url,
      events: config.events,
      environment: config.environment,
      webhooks,
      // Made once: the outbound folders come from the pipelines, which a reload (SIGHUP) keeps.
      files: fileDestinations(drops, config.events.deliveryTimeoutMs, log),
      metrics: createEventsMetrics(
        registry,
        config.tenants.map((tenant) => tenant.businessId),
      ),
      reconnect: config.broker.reconnect,
      ...(history && { history }),
    },
    log,
  );
  return consumer;
}
