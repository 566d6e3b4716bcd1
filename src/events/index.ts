import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { EventsConfig } from './config.js';
import { createEventsConsumer, type EventsConsumer } from './consumer.js';
import { createEventsMetrics } from './metrics.js';
import { withFileDestinations, type OutboundDrop } from './destinations/file/index.js';
import type { Destination, SubscriptionSource } from './subscriptions.js';

export interface EventsSource extends SubscriptionSource {
  readonly events: EventsConfig;
  readonly broker: {
    readonly url?: string | undefined;
    readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  };
}

/**
 * The outbound half as `serve` runs it, given the endpoints `resolveEndpoints` made at start-up
 * (before anything connects) and the opened drops (a pipeline declaring `events` gets its
 * outbound folder). Undefined without a broker: events arrive only through RabbitMQ.
 */
export function openEvents(
  config: EventsSource,
  endpoints: ReadonlyMap<string, readonly Destination[]>,
  log: Logger,
  registry: Registry,
  drops: readonly OutboundDrop[] = [],
): EventsConsumer | undefined {
  if (!config.broker.url) {
    log.info('events: no broker configured (AMQP_URL); webhooks are not delivered');
    return undefined;
  }
  const withFiles = (webhooks: ReadonlyMap<string, readonly Destination[]>) =>
    withFileDestinations(webhooks, drops, config.events.deliveryTimeoutMs);
  const consumer = createEventsConsumer(
    {
      url: config.broker.url,
      events: config.events,
      environment: config.environment,
      endpoints: withFiles(endpoints),
      metrics: createEventsMetrics(
        registry,
        config.tenants.map((tenant) => tenant.businessId),
      ),
      reconnect: config.broker.reconnect,
    },
    log,
  );
  // A reload (SIGHUP) swaps the webhooks; the outbound folders come from the pipelines, which stay.
  return { ...consumer, setEndpoints: (webhooks) => consumer.setEndpoints(withFiles(webhooks)) };
}
