/**
 * What `events resend` and `events recover` need besides the broker: the history, opened the
 * way `lineage` opens it (through `serve`'s socket while it holds an embedded one), and the
 * configured webhook an `--endpoint` names, by its `id` or its URL.
 */
import type { WebhookConfig } from '../../events/config.js';
import { webhookEndpointId } from '../../events/subscriptions.js';
import { HistoryUnavailable } from '../../operator-errors.js';
import { historyStore, type HistorySource } from '../../history/index.js';
import type { HistoryStore } from '../../history/store.js';
import { createLogger } from '../../log.js';
import { CannotRead } from '../check-commands.js';
import { UsageError } from '../help.js';

/** A configured webhook an event can be sent to alone. */
export interface EndpointTarget {
  readonly businessId: string;
  /** What a retry copy names it by (`x-webhook-endpoint`). */
  readonly header: string;
  /** Its names in the history's attempts: its `id`, and its URL (from before it had an id). */
  readonly names: readonly string[];
  /** For the output: its `id`, or its host (never the URL's path or query, which may hold a token). */
  readonly label: string;
}

type Tenants = ReadonlyArray<{
  readonly businessId: string;
  readonly webhooks?: readonly WebhookConfig[] | undefined;
}>;

/**
 * The webhooks `endpoint` names (an `id` is unique within a business, not across them): of one
 * business when given, else of every business. A disabled one (`enabled: false`) is refused: a
 * worker would dead-letter what is sent to it (`endpoint-removed`).
 */
export function endpointTargets(
  tenants: Tenants,
  endpoint: string,
  businessId?: string,
): EndpointTarget[] {
  const targets: EndpointTarget[] = [];
  for (const tenant of tenants) {
    if (businessId !== undefined && tenant.businessId !== businessId) continue;
    for (const webhook of tenant.webhooks ?? []) {
      if (webhook.id !== endpoint && webhook.url !== endpoint) continue;
      if (webhook.enabled === false)
        throw new UsageError(
          `${tenant.businessId}'s endpoint ${endpoint} is disabled (enabled: false): a worker would dead-letter what is sent to it`,
          'events',
        );
      targets.push({
        businessId: tenant.businessId,
        header: webhookEndpointId(tenant.businessId, webhook),
        names: webhook.id ? [webhook.id, webhook.url] : [webhook.url],
        label: webhook.id ?? new URL(webhook.url).host,
      });
    }
  }
  if (targets.length === 0)
    throw new UsageError(
      `no configured webhook${businessId === undefined ? '' : ` of ${businessId}`} has the id or URL ${JSON.stringify(endpoint)}`,
      'events',
    );
  return targets;
}

/**
 * Runs `work` on the configured history, opened (its migrations applied) and closed after. Off,
 * or the sandbox: a usage error saying how to turn it on. An embedded one held by a running
 * `serve` is reached through its socket (history/command.ts). Unreachable: `CannotRead` with the
 * store's reason, exit 2.
 */
export async function withHistory<T>(
  source: HistorySource & { readonly environment: string },
  command: string,
  work: (store: HistoryStore) => Promise<T>,
): Promise<T> {
  if (source.environment === 'sandbox')
    throw new UsageError(
      `events ${command} reads the history, which the sandbox never keeps`,
      'events',
    );
  if (!source.history.enabled)
    throw new UsageError(
      `events ${command} reads the history, which is off: turn it on with history.enabled: true (INGEST_HISTORY__ENABLED=true) in every instance; events received from then on can be resent`,
      'events',
    );
  const store = historyStore(source, createLogger({ level: 'silent' }));
  try {
    await store.open();
    return await work(store);
  } catch (error) {
    if (!(error instanceof HistoryUnavailable)) throw error;
    throw new CannotRead(`the history could not be read: ${error.message}`);
  } finally {
    await store.close().catch(() => undefined);
  }
}
