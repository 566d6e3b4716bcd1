import type { Config } from '../config.js';
import type { Publisher } from '../publish/publisher.js';
import type { BatchOutcome, Ingest } from './batch.js';
import { createIngest } from './flow.js';
import { compileRoutingKey } from './route.js';

/** What counting needs of the metrics (metrics.ts implements it; ingest/ does not import it). */
export interface IngestMetrics {
  timed(publisher: Publisher): Publisher;
  readonly observeBatch: (outcome: BatchOutcome) => void;
}

/** The one `ingest()` every source feeds, routed as configured and counted in `metrics` when given. */
export function configuredIngest(
  config: Readonly<Config>,
  publisher: Publisher,
  metrics?: IngestMetrics,
): Ingest {
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  if (!metrics) return createIngest({ publisher, routingKeyFor });
  return createIngest({
    publisher: metrics.timed(publisher),
    routingKeyFor,
    observer: metrics.observeBatch,
  });
}
