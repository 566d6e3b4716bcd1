import type { Logger } from '../log.js';
import { checkEventData } from './catalog/index.js';
import type { WarehouseEvent } from './event.js';
import type { EventsMetrics } from './metrics.js';
import { OPERATOR_BUSINESS } from './operator.js';

/** Distinct types a worker logs a mismatch for; past them only the metric counts (types are the producer's to invent). */
const LOGGED_TYPES_LIMIT = 100;

/**
 * Holds each event arriving for delivery against the event catalog (catalog/): one that breaks it
 * is still delivered, counted in `warehouse_ingest_event_contract_mismatches_total{type}` and
 * logged once per type. The warehouse produces the events; refusing or dead-lettering them would
 * stop a business's confirmations over a schema drift, while the metric and the log line tell
 * the operator to update the catalog or ask the warehouse (docs/decisions.md).
 */
export function createContractCheck(
  metrics: Pick<EventsMetrics, 'contractMismatch'>,
  log: Logger,
): (event: WarehouseEvent) => void {
  const logged = new Set<string>();
  return (event) => {
    // Operator events are the service's own (operator.ts), not the warehouse's: not in its catalog.
    if (event.businessId === OPERATOR_BUSINESS) return;
    const check = checkEventData(event.type, event.data);
    if (check.ok) return;
    metrics.contractMismatch(check.unknownType ? undefined : event.type);
    if (logged.has(event.type) || logged.size >= LOGGED_TYPES_LIMIT) return;
    logged.add(event.type);
    const about = { eventId: event.id, type: event.type, businessId: event.businessId };
    if (check.unknownType)
      log.warn(
        about,
        'event type not in the event catalog: delivered anyway (logged once per type)',
      );
    else
      log.warn(
        { ...about, issues: check.issues.slice(0, 10) },
        "event data does not match its type's schema in the event catalog: delivered anyway (logged once per type)",
      );
  };
}
