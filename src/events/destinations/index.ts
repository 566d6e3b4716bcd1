import type { Endpoint } from '../subscriptions.js';
import type { Destination } from './destination.js';
import type { Deliverer } from './webhook/deliver.js';
import { webhookDestination } from './webhook/index.js';

export type { AttemptResult, Destination } from './destination.js';

/**
 * Every business's destinations: its webhook endpoints, bound to the worker's deliverer, then its
 * outbound folders (destinations/file/, made once per pipeline). Adding a kind of destination is
 * one module implementing `Destination` and one line here.
 */
export function destinationsByBusiness(
  webhooks: ReadonlyMap<string, readonly Endpoint[]>,
  files: readonly Destination[],
  deliverer: Deliverer,
): ReadonlyMap<string, readonly Destination[]> {
  const byBusiness = new Map<string, Destination[]>();
  for (const [business, endpoints] of webhooks)
    byBusiness.set(
      business,
      endpoints.map((endpoint) => webhookDestination(endpoint, deliverer)),
    );
  for (const file of files)
    byBusiness.set(file.businessId, [...(byBusiness.get(file.businessId) ?? []), file]);
  return byBusiness;
}
