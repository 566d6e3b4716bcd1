import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  type AttemptEnd,
  DEAD_REASONS,
  type DeadReason,
  type DeliveryOutcome,
  type EndpointCondition,
} from '../vocabulary.js';
import { CATALOG_TYPES } from './catalog/index.js';
import { OPERATOR_BUSINESS } from './operator.js';

export interface EventsMetrics {
  delivery(outcome: DeliveryOutcome, businessId: string): void;
  /** Times one HTTP attempt; call the result with how it ended. */
  attempt(): (result: AttemptEnd) => void;
  deadLetter(reason: DeadReason): void;
  setEndpoints(state: EndpointCondition, count: number): void;
  /** An event that breaks the event catalog: its type's data did not match, or (undefined) its type is not listed. */
  contractMismatch(type: string | undefined): void;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30];

/**
 * Series of the outbound half, on the app's registry. Business ids are labels only for
 * configured tenants and the operator webhook's (`other` otherwise), so an event for an invented id cannot grow the series.
 * No URL, host or secret is ever a label.
 */
export function createEventsMetrics(
  registry: Registry,
  businesses: readonly string[],
): EventsMetrics {
  const known = new Set([...businesses, OPERATOR_BUSINESS]);
  const registers = [registry];
  const deliveries = new Counter({
    name: 'warehouse_ingest_event_deliveries_total',
    help: 'Events per endpoint by outcome (delivered, retrying, deferred, dead, gone) and business; sandbox and unsubscribed per event.',
    labelNames: ['outcome', 'business'] as const,
    registers,
  });
  const attempts = new Histogram({
    name: 'warehouse_ingest_event_attempt_duration_seconds',
    help: 'One webhook attempt, from sending to the end of the (capped) answer.',
    labelNames: ['result'] as const,
    buckets: BUCKETS,
    registers,
  });
  const dead = new Counter({
    name: 'warehouse_ingest_event_dead_letters_total',
    help: 'Events put in the dead-letter queue, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const endpoints = new Gauge({
    name: 'warehouse_ingest_event_endpoints',
    help: 'Webhook endpoints and outbound folders failing (last attempt failed), backed-off (failing continuously: no attempts during a cool-down) or disabled (answered 410, or disabled by an operator; shared by every worker), as this worker sees them.',
    labelNames: ['state'] as const,
    registers,
  });
  const mismatches = new Counter({
    name: 'warehouse_ingest_event_contract_mismatches_total',
    help: 'Events delivered although they break the event catalog: by type whose data does not match its schema, or type="other" for a type the catalog does not list.',
    labelNames: ['type'] as const,
    registers,
  });
  // Every reason from 0, so `increase(…) > 0` sees the first dead letter of each.
  for (const reason of DEAD_REASONS) dead.inc({ reason }, 0);
  for (const type of [...Object.keys(CATALOG_TYPES), 'other']) mismatches.inc({ type }, 0);
  endpoints.set({ state: 'failing' }, 0);
  endpoints.set({ state: 'disabled' }, 0);
  endpoints.set({ state: 'backed-off' }, 0);
  // One labelled child per (outcome, business), made once: prom-client hashes a label object on every inc.
  const children = new Map<string, { inc(): void }>();
  const timings = new Map<string, { observe(seconds: number): void }>();
  return {
    delivery: (outcome, businessId) => {
      const business = known.has(businessId) ? businessId : 'other';
      const key = `${outcome}\u0000${business}`;
      let child = children.get(key);
      if (!child) children.set(key, (child = deliveries.labels({ outcome, business })));
      child.inc();
    },
    attempt: () => {
      const started = performance.now();
      return (result) => {
        let child = timings.get(result);
        if (!child) timings.set(result, (child = attempts.labels({ result })));
        child.observe((performance.now() - started) / 1000);
      };
    },
    deadLetter: (reason) => dead.inc({ reason }),
    setEndpoints: (state, count) => endpoints.set({ state }, count),
    // Catalog types only as labels (`other` for the rest): an invented type cannot grow the series.
    contractMismatch: (type) => mismatches.inc({ type: type ?? 'other' }),
  };
}
