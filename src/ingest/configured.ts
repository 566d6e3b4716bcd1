import type { Config } from '../config.js';
import type { Publisher } from '../publish/publisher.js';
import type { BatchOutcome, Ingest } from './batch.js';
import type { BatchEnds } from './batch-end.js';
import { createIngest } from './flow.js';
import { compileRoutingKey } from './route.js';

/** What counting needs of the metrics (metrics.ts implements it; ingest/ does not import it). */
export interface IngestMetrics {
  timed(publisher: Publisher): Publisher;
  readonly observeBatch: (outcome: BatchOutcome) => void;
}

/**
 * The one `ingest()` every source feeds, routed as configured, counted in `metrics` and every
 * batch ended in `ends` (the history) when given.
 */
export function configuredIngest(
  config: Readonly<Config>,
  publisher: Publisher,
  metrics?: IngestMetrics,
  ends?: BatchEnds,
): Ingest {
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  return createIngest({
    publisher: metrics ? metrics.timed(publisher) : publisher,
    routingKeyFor,
    ...(metrics && { observer: metrics.observeBatch }),
    ...(ends && { ends }),
  });
}
