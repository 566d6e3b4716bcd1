import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { EventsConfig } from './config.js';
import { createEventsConsumer, type EventsConsumer } from './consumer.js';
import { createEventsMetrics } from './metrics.js';
import type { Endpoint, SubscriptionSource } from './subscriptions.js';

export interface EventsSource extends SubscriptionSource {
  readonly events: EventsConfig;
  readonly broker: {
    readonly url?: string | undefined;
    readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  };
}

/**
 * The outbound half as `serve` runs it, given the endpoints `resolveEndpoints` made at start-up
 * (before anything connects). Undefined without a broker: events arrive only through RabbitMQ.
 */
export function openEvents(
  config: EventsSource,
  endpoints: ReadonlyMap<string, readonly Endpoint[]>,
  log: Logger,
  registry: Registry,
): EventsConsumer | undefined {
  if (!config.broker.url) {
    log.info('events: no broker configured (AMQP_URL); webhooks are not delivered');
    return undefined;
  }
  return createEventsConsumer(
    {
      url: config.broker.url,
      events: config.events,
      environment: config.environment,
      endpoints,
      metrics: createEventsMetrics(
        registry,
        config.tenants.map((tenant) => tenant.businessId),
      ),
      reconnect: config.broker.reconnect,
    },
    log,
  );
}
