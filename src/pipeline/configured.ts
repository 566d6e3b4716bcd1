import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { Publisher } from '../publish/publisher.js';
import type { Ingest } from './batch.js';
import { createIngest } from './ingest.js';
import { compileRoutingKey } from './route.js';

/** The one `ingest()` every source feeds, routed as configured and counted in `metrics` when given. */
export function configuredIngest(
  config: Readonly<Config>,
  publisher: Publisher,
  metrics?: Metrics,
): Ingest {
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  if (!metrics) return createIngest({ publisher, routingKeyFor });
  return createIngest({
    publisher: metrics.timed(publisher),
    routingKeyFor,
    observer: metrics.observeBatch,
  });
}
