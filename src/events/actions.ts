/**
 * What a business (the partner API, the portal) may ask of the outbound half while it runs: its
 * endpoints as configured, an event sent again, a test event to one endpoint. The worker that
 * serves the request does it on its own broker connection and deliverer (consumer.ts hands them
 * in), so a request opens no connection of its own.
 */
import { randomUUID } from 'node:crypto';
import { NoSubscriber, NotFound, PublishFailed } from '../errors.js';
import type { ConfirmedChannel } from '../broker/confirms.js';
import type { AttemptEntry, EventEntry } from '../history/store.js';
import { webhookTest } from './catalog/index.js';
import type { Deliverer } from './destinations/webhook/deliver.js';
import type { Destination } from './destinations/index.js';
import { webhookDestination } from './destinations/webhook/index.js';
import { warehouseEvent } from './event.js';
import { attemptEntry, type EventsRecord } from './record.js';
import { resendCopy } from './resend.js';
import type { Endpoint } from './subscriptions.js';

/** One endpoint as its business sees it: never a secret, never the signing keys. */
export interface EndpointView {
  readonly id: string;
  readonly name: string;
  /** Without any user or password in it. */
  readonly url: string;
  readonly events: readonly string[];
}

export interface EventActions {
  /** The business's webhook endpoints in force (a reload swaps them). */
  endpoints(businessId: string): readonly EndpointView[];
  /**
   * Publishes the event to the delivery queue again (confirmed), to every endpoint of its
   * business that takes its type now (its webhooks and outbound folders, `file:<pipeline>`), or
   * to the one named by its id; answers their names.
   * `NotFound` for an id the business lacks, `NoSubscriber` when no endpoint takes it (or it is
   * a `webhook.test`: a test is sent anew, never resent),
   * `PublishFailed` while the broker is away.
   */
  resend(event: EventEntry, endpointId?: string): Promise<readonly string[]>;
  /**
   * Sends a signed `webhook.test` event to the endpoint now, whatever its state (a test is how a
   * fix is checked), and answers how the attempt ended; undefined for an id the business lacks.
   */
  sendTest(businessId: string, endpointId: string): Promise<AttemptEntry | undefined>;
}

export interface EventActionsDependencies {
  readonly queue: string;
  /** The worker's confirm channel on the delivery queue's default exchange, while connected. */
  readonly publishing: () => ConfirmedChannel | undefined;
  readonly webhooks: () => ReadonlyMap<string, readonly Endpoint[]>;
  /** The outbound folders (a pipeline's `events`): a resend matched afresh writes their files too. @default none */
  readonly files?: readonly Destination[];
  readonly deliverer: Deliverer;
  /** Where the test event and its attempt are kept, when the history is on. */
  readonly record?: EventsRecord;
}

const view = (endpoint: Endpoint): EndpointView => {
  const url = new URL(endpoint.url);
  url.username = '';
  url.password = '';
  return { id: endpoint.id, name: endpoint.name, url: url.href, events: endpoint.patterns };
};

export function createEventActions(deps: EventActionsDependencies): EventActions {
  const endpointsOf = (businessId: string) => deps.webhooks().get(businessId) ?? [];
  return {
    endpoints: (businessId) => endpointsOf(businessId).map(view),

    async resend(event, endpointId) {
      // A test proves an endpoint now: a new one is sent (sendTest), an old one never again.
      if (event.type === webhookTest.type)
        throw new NoSubscriber({
          detail: `${event.type} events are not sent again: send a new test event to the endpoint (POST /api/v2/webhooks/{id}/test).`,
        });
      const all = endpointsOf(event.businessId);
      const named = endpointId === undefined ? undefined : all.find((e) => e.id === endpointId);
      if (endpointId !== undefined && !named)
        throw new NotFound({
          detail: `No webhook endpoint of yours has id ${JSON.stringify(endpointId.slice(0, 100))}: GET /api/v2/webhooks lists them.`,
        });
      const takes = (destination: Pick<Endpoint, 'businessId' | 'matches'>) =>
        destination.businessId === event.businessId && destination.matches(event.type);
      // Named as the worker that takes it will match it: the webhooks, and the outbound folders.
      const to = named
        ? [named.name]
        : [...all.filter(takes), ...(deps.files ?? []).filter(takes)].map((d) => d.name);
      if (to.length === 0)
        throw new NoSubscriber({
          detail: `None of your webhook endpoints takes ${event.type} events now; nothing was sent.`,
        });
      const channel = deps.publishing();
      if (!channel)
        throw new PublishFailed('The events worker is not connected to the broker just now.');
      // Matched afresh by the worker that takes it, unless one endpoint was named.
      await channel.publishCopies([
        resendCopy(deps.queue, { event, ...(named && { endpoint: named.id }) }),
      ]);
      return to;
    },

    async sendTest(businessId, endpointId) {
      const endpoint = endpointsOf(businessId).find((candidate) => candidate.id === endpointId);
      if (!endpoint) return undefined;
      const event = warehouseEvent({
        id: `test_${randomUUID()}`,
        type: webhookTest.type,
        businessId,
        occurredAt: new Date(),
        data: { endpoint: endpoint.name, message: 'A test event from warehouse-ingest.' },
      });
      deps.record?.received(event);
      const at = new Date();
      const started = performance.now();
      const destination = webhookDestination(endpoint, deps.deliverer);
      const result = await destination.attempt(event);
      const durationMs = performance.now() - started;
      deps.record?.attempted(destination, event, at, durationMs, result);
      return attemptEntry(destination, event, at, Math.round(durationMs), result);
    },
  };
}
