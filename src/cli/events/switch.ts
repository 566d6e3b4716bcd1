/**
 * `events disable` / `events enable`: an operator's decision about one endpoint, told at once to
 * every worker consuming now (a word on the control exchange, events/control.ts) and kept in
 * the history for the workers that start later. Each worker that has the endpoint writes the
 * decision to the history too, so it is kept even when this command cannot reach the history.
 */
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig, WebhookConfig } from '../../events/config.js';
import { assertControlExchange, publishControl, type ControlWord } from '../../events/control.js';
import { fileDestinationId } from '../../events/destinations/file/index.js';
import {
  endpointDisabledMessage,
  publishOperatorEvent,
  type EndpointRef,
} from '../../events/operator.js';
import { webhookEndpointId, webhookEndpointName } from '../../events/subscriptions.js';
import { eventsTopology } from '../../events/topology.js';
import type { EndpointStateEntry, HistoryStore } from '../../history/store.js';

export interface SwitchOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly tenants: ReadonlyArray<{
    readonly businessId: string;
    readonly webhooks?: readonly WebhookConfig[] | undefined;
  }>;
  readonly outbound?: ReadonlyArray<{
    readonly name: string;
    readonly businessId: string;
    readonly events?: unknown;
  }>;
  readonly action: 'disable' | 'enable';
  /** The endpoint's id, its URL, or `file:<pipeline>`. */
  readonly endpoint: string;
  readonly businessId?: string;
  /** The history, not opened; absent when it is off. */
  readonly history?: HistoryStore;
}

export interface Target {
  readonly businessId: string;
  /** As the history names it. */
  readonly endpoint: string;
  /** As an operator event names it (the operator webhook's `endpoint.disabled`). */
  readonly ref: EndpointRef;
}

/** The configured endpoints `endpoint` names, in `businessId` when given. */
export function targetsOf(options: Omit<SwitchOptions, 'url' | 'events' | 'action'>): Target[] {
  const targets: Target[] = [];
  for (const tenant of options.tenants) {
    if (options.businessId !== undefined && tenant.businessId !== options.businessId) continue;
    for (const webhook of tenant.webhooks ?? []) {
      const name = webhookEndpointName(webhook);
      if (name === options.endpoint || webhook.url === options.endpoint)
        targets.push({
          businessId: tenant.businessId,
          endpoint: name,
          ref: {
            id: webhookEndpointId(tenant.businessId, webhook),
            kind: 'webhook',
            host: new URL(webhook.url).host,
          },
        });
    }
  }
  for (const pipeline of options.outbound ?? [])
    if (
      pipeline.events &&
      `file:${pipeline.name}` === options.endpoint &&
      (options.businessId === undefined || pipeline.businessId === options.businessId)
    )
      targets.push({
        businessId: pipeline.businessId,
        endpoint: `file:${pipeline.name}`,
        ref: {
          id: fileDestinationId(pipeline.businessId, pipeline.name),
          kind: 'file',
          host: `file:${pipeline.name}`,
        },
      });
  return targets;
}

/**
 * Tells every worker, then writes the history when it can. Answers whether the history took it
 * (`written`), or why not.
 */
export async function switchEndpoint(
  options: SwitchOptions,
  targets: readonly Target[],
  now = new Date(),
): Promise<{ history: 'written' | 'off' | { readonly unavailable: string } }> {
  const { queue } = eventsTopology(options.events);
  const words: ControlWord[] = targets.map(({ businessId, endpoint }) =>
    options.action === 'disable'
      ? { action: 'disable', businessId, endpoint, by: 'operator', at: now.toISOString() }
      : { action: 'enable', businessId, endpoint, at: now.toISOString() },
  );
  const connection = await openBrokerConnection({
    url: options.url,
    name: `warehouse-ingest events ${options.action}`,
  });
  try {
    const channel = await connection.createConfirmChannel();
    await assertControlExchange(channel, queue);
    for (const word of words) publishControl(channel, queue, word);
    // The operator webhook hears of a disable as of a 410 (nothing when none is configured).
    if (options.action === 'disable')
      for (const { businessId, ref } of targets)
        await publishOperatorEvent(
          channel,
          options.events,
          endpointDisabledMessage(
            { businessId, endpoint: ref, disabledBy: 'operator', reason: 'events disable' },
            now,
          ),
        );
    await channel.waitForConfirms();
    await channel.close();
  } finally {
    await connection.close().catch(() => undefined);
  }
  if (!options.history) return { history: 'off' };
  const rows: EndpointStateEntry[] = targets.map(({ businessId, endpoint }) => ({
    businessId,
    endpoint,
    enabled: options.action === 'enable',
    ...(options.action === 'disable' && { disabledBy: 'operator' as const }),
    circuit: 'closed',
    updatedAt: now,
  }));
  try {
    await options.history.open();
    await options.history.write({ endpointStates: rows });
    return { history: 'written' };
  } catch (error) {
    return { history: { unavailable: (error as Error).message } };
  } finally {
    await options.history.close().catch(() => undefined);
  }
}
