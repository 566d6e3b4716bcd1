import type { Endpoint } from '../../subscriptions.js';
import { type Destination, targetOf } from '../destination.js';
import type { Deliverer } from './deliver.js';

/** A configured webhook endpoint as a destination: its attempts go through the worker's deliverer. */
export function webhookDestination(endpoint: Endpoint, deliverer: Deliverer): Destination {
  return {
    kind: 'webhook',
    id: endpoint.id,
    name: endpoint.name,
    businessId: endpoint.businessId,
    host: endpoint.host,
    target: targetOf(endpoint.url.href),
    matches: endpoint.matches,
    attempt: (event) => deliverer.attempt(endpoint, event),
  };
}
