import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import { brokerNodeOf, keepBrokerConnection, type KeptConnection } from '../broker/connection.js';
import type { Logger } from '../log.js';
import type { EventsConfig } from './config.js';
import { bindControlQueue, parseControl, publishControl } from './control.js';
import { createDeliverer } from './destinations/webhook/deliver.js';
import { confirmedChannel, type ConfirmedChannel, type MessageCopy } from '../broker/confirms.js';
import { deadForDefect, handleEvent, type HandlerContext, type Park } from './handle.js';
import { createContractCheck } from './contract.js';
import { createLanes } from './lanes.js';
import { EndpointStates } from './state/endpoint.js';
import type { EventsMetrics } from './metrics.js';
import {
  ATTEMPTS_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
} from './retry.js';
import type { Resolver } from './destinations/webhook/ssrf.js';
import { destinationsByBusiness, type Destination } from './destinations/index.js';
import type { Endpoint } from './subscriptions.js';
import { createEventActions, type EventActions } from './actions.js';
import { historyRecord } from './record.js';
import { applyDecision, fromWord, loadEndpointStates, type EventsHistory } from './shared-state.js';
import { assertEventsTopology, eventsTopology } from './topology.js';
import {
  assertWorkersQueueTolerant,
  buildReport,
  publishReport,
  workerName,
  workersQueueName,
} from './worker-report.js';

export interface EventsConsumerOptions {
  /** Broker address, or a cluster's node addresses; hold passwords, only the node's `host:port` is logged. */
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly environment: HandlerContext['environment'];
  /** Webhook endpoints per business id, from `resolveEndpoints`. A business absent here is unknown. */
  readonly webhooks: ReadonlyMap<string, readonly Endpoint[]>;
  /** Outbound folders (destinations/file/, one per pipeline that declares `events`). @default [] */
  readonly files?: readonly Destination[];
  readonly metrics: EventsMetrics;
  /** Name resolution for guarded endpoints; tests pass a stub. */
  readonly resolver?: Resolver;
  /** @default { initialDelayMs: 500, maxDelayMs: 5000 } */
  readonly reconnect?: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  /** How often this worker reports its figures for `events status` (worker-report.ts). @default 10000 */
  readonly reportIntervalMs?: number;
  /** Where events, attempts and endpoint states are kept; absent when the history is off. */
  readonly history?: EventsHistory;
}

export interface EventsConsumer {
  /**
   * Resolves once the topology is declared and consuming started (the first time), or once the
   * first try found no broker: consuming then starts when it comes (`serve` must not exit for a
   * broker that is not up yet). Rejects when the broker refused the topology.
   */
  start(): Promise<void>;
  /** Stops taking events, lets attempts in flight finish (bounded by the timeout), closes. */
  close(): Promise<void>;
  /**
   * Swaps the subscriptions (a configuration reload, SIGHUP): events taken from now on are
   * matched against these; an event being delivered keeps the endpoints it was matched with.
   */
  setWebhooks(webhooks: ReadonlyMap<string, readonly Endpoint[]>): void;
  /** What the partner API asks of this worker: endpoints, resend, test (actions.ts). */
  readonly actions: EventActions;
}

const OWN_HEADERS = [
  ATTEMPTS_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
  'x-death',
];

/** How long the broker may take to confirm a parked copy before the original is kept instead. */
const PARK_CONFIRM_TIMEOUT_MS = 30_000;

/**
 * Publishes the parks with confirms and `mandatory`; resolves only when the broker has put every
 * copy in its queue (a copy for a queue that is gone is returned, and rejects). A park with a
 * message of its own (an operator event) is published as that message.
 */
function publishParks(parking: ConfirmedChannel, message: ConsumeMessage, parks: readonly Park[]) {
  return parking.publishCopies(
    parks.map((park) =>
      park.message
        ? {
            messageId: park.message.properties.messageId,
            routingKey: park.queue,
            body: park.message.content,
            properties: park.message.properties,
          }
        : copyOf(message, park),
    ),
  );
}

/** The event's copy for one park: its properties, the warehouse's headers and ours. */
function copyOf(message: ConsumeMessage, park: Park): MessageCopy {
  const { properties } = message;
  const inherited = Object.fromEntries(
    Object.entries(properties.headers ?? {}).filter(([key]) => !OWN_HEADERS.includes(key)),
  );
  const messageId = String(properties.messageId ?? '');
  return {
    messageId,
    routingKey: park.queue,
    body: message.content,
    properties: {
      messageId: properties.messageId,
      type: properties.type,
      timestamp: properties.timestamp ?? park.timestamp,
      contentType: properties.contentType,
      headers: { ...inherited, ...park.headers },
    },
  };
}

/**
 * The worker side: consumes the delivery queue with manual acks and bounded prefetch, and acks
 * an event only once every endpoint has it or its copy is parked (confirmed) in a retry or the
 * dead-letter queue. A crash before the ack makes the broker redeliver: at-least-once, and a
 * duplicate carries the same `webhook-id`. Reconnects with back-off, forever, like the publisher.
 */
export function createEventsConsumer(options: EventsConsumerOptions, log: Logger): EventsConsumer {
  const topology = eventsTopology(options.events);
  const deliverer = createDeliverer({
    timeoutMs: options.events.deliveryTimeoutMs,
    responseBodyLimitBytes: options.events.responseBodyLimitBytes,
    ...(options.resolver ? { resolver: options.resolver } : {}),
  });
  const context: { -readonly [K in keyof HandlerContext]: HandlerContext[K] } = {
    environment: options.environment,
    endpoints: destinationsByBusiness(options.webhooks, options.files ?? [], deliverer),
    schedule: options.events.retrySchedule,
    circuit: {
      threshold: options.events.circuit.failures,
      coolDownMs: options.events.circuit.coolDownMs,
      maxCoolDownMs: options.events.circuit.maxCoolDownMs,
    },
    topology,
    lanes: createLanes(
      options.events.concurrencyPerEndpoint,
      Math.min(1000, options.events.deliveryTimeoutMs),
    ),
    metrics: options.metrics,
    endpointStates: new EndpointStates(),
    ...(options.history && { record: historyRecord(options.history.writer) }),
    announceGone: (endpoint, at) => {
      // Best effort: a word lost with a connection leaves the other workers to meet the 410
      // themselves (once each); the history has the decision for every later start.
      try {
        if (controlChannel && kept?.current)
          publishControl(controlChannel, topology.queue, {
            action: 'disable',
            businessId: endpoint.businessId,
            endpoint: endpoint.name,
            by: 'gone',
            at: new Date(at).toISOString(),
          });
      } catch {
        // the channel closed under us
      }
    },
    log: log.child({ component: 'events' }),
    checkContract: createContractCheck(options.metrics, log.child({ component: 'events' })),
  };
  let controlChannel: ConfirmChannel | undefined;
  /** The history's endpoint states, read once (waited for, briefly, before the first consume). */
  let statesLoaded: Promise<void> | undefined;
  let kept: KeptConnection | undefined;
  let closed = false;
  const inFlight = new Set<Promise<void>>();
  let cancel: (() => Promise<unknown>) | undefined;
  const identity = {
    worker: workerName(),
    startedAt: new Date(),
    intervalMs: options.reportIntervalMs ?? 10_000,
  };
  let reportChannel: ConfirmChannel | undefined;
  /** Best effort: a report lost with a connection is replaced by the next one. */
  const report = () => {
    try {
      if (reportChannel && kept?.current)
        publishReport(
          reportChannel,
          topology.queue,
          buildReport(context.endpointStates, identity, new Date()),
        );
    } catch {
      // the channel closed under us; the reconnect sets a new one
    }
  };
  let webhooks = options.webhooks;
  let publishing: ConfirmedChannel | undefined;
  const actions = createEventActions({
    queue: topology.queue,
    publishing: () => (kept?.current ? publishing : undefined),
    webhooks: () => webhooks,
    ...(options.files && { files: options.files }),
    deliverer,
    ...(context.record && { record: context.record }),
  });
  const reporting = setInterval(report, identity.intervalMs);
  reporting.unref();

  /** On every fresh connection: the topology, the parking channel, then consuming. */
  async function setUp(model: ChannelModel): Promise<void> {
    const confirms = await model.createConfirmChannel();
    confirms.on('error', () => undefined);
    const scratch = () => model.createChannel();
    const down = await assertEventsTopology(confirms, topology, options.events.queue.type, scratch);
    if (await assertWorkersQueueTolerant(scratch, topology.queue))
      down.push(workersQueueName(topology.queue));
    if (down.length > 0)
      context.log.warn(
        { node: brokerNodeOf(model), queues: down },
        'events: these classic queues live on a broker node that is down; consuming without them (an event that needs a retry is redelivered instead of parked) until it is back',
      );
    const consuming = await model.createChannel();
    consuming.on('error', () => undefined);
    // A channel closed alone (queue deleted, a precondition failed) is recovered as a lost connection.
    for (const channel of [consuming, confirms])
      channel.on('close', () => {
        if (!closed && kept?.current === model) void model.close().catch(() => undefined);
      });
    // Words first, then the states kept: a decision taken while they are read is not missed.
    const control = await bindControlQueue(consuming, topology.queue);
    await consuming.consume(
      control,
      (message) => {
        const word = message && parseControl(message.content);
        if (word) applyDecision(context, fromWord(word));
      },
      { noAck: true },
    );
    controlChannel = confirms;
    if (options.history)
      await (statesLoaded ??= loadEndpointStates(context, options.history, () => closed));
    await consuming.prefetch(options.events.prefetch);
    const parking = confirmedChannel(confirms, '', PARK_CONFIRM_TIMEOUT_MS);
    publishing = parking;
    const { consumerTag } = await consuming.consume(topology.queue, (message) => {
      if (!message) return; // cancelled by the broker (queue deleted): the channel close reconnects
      const work = (async () => {
        // One failure boundary from taking the event to its ack: whatever handling throws, the
        // event is dead-lettered with the reason, so no event can hold its prefetch slot for good.
        let parks: Park[];
        try {
          parks = await handleEvent(context, message.content, message.properties);
        } catch (error) {
          parks = [deadForDefect(context, message.properties, error)];
        }
        try {
          if (parks.length > 0) await publishParks(parking, message, parks);
          consuming.ack(message);
        } catch (error) {
          // Not parked: the connection or channel was lost, or a queue is gone (the copy was
          // returned). The original is kept: closing the connection hands it back to the broker,
          // and reconnecting declares the topology again before it is taken anew.
          context.log.warn(
            { eventId: message.properties.messageId, reason: (error as Error).message },
            'events: could not park an event; it will be redelivered',
          );
          if (!closed && kept?.current === model) void model.close().catch(() => undefined);
        }
      })();
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    });
    cancel = () => consuming.cancel(consumerTag);
    reportChannel = confirms;
    report();
    context.log.info(
      { node: brokerNodeOf(model), queue: topology.queue, exchange: topology.exchange },
      'events: consuming',
    );
  }

  return {
    start() {
      kept ??= keepBrokerConnection({
        url: options.url,
        name: 'warehouse-ingest events',
        ...(options.reconnect ? { reconnect: options.reconnect } : {}),
        setUp,
        onLost: (error, node) =>
          context.log.warn(
            { node, reason: error?.message },
            'events: broker connection lost; reconnecting (the next node first)',
          ),
        onFailed: (error, retryInMs) =>
          context.log.warn(
            { reason: error.message, retryInMs },
            'events: cannot consume yet; retrying',
          ),
      });
      // A refused topology is the caller's to report (a config problem); an absent broker is not.
      return kept.firstAttempt;
    },
    async close() {
      closed = true;
      clearInterval(reporting);
      await cancel?.().catch(() => undefined);
      await Promise.allSettled([...inFlight]);
      await kept?.close();
      await deliverer.close();
    },
    setWebhooks(resolved) {
      webhooks = resolved;
      context.endpoints = destinationsByBusiness(resolved, options.files ?? [], deliverer);
    },
    actions,
  };
}
