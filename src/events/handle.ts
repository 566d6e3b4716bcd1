import type { MessageProperties } from 'amqplib';
import type { Logger } from '../log.js';
import {
  decide,
  failed,
  probing,
  succeeded,
  type Circuit,
  type CircuitSettings,
} from './state/circuit.js';
import {
  attemptFailed,
  retargeted,
  delivered,
  type EndpointState,
  type EndpointStates,
  gone,
  withCircuit,
} from './state/endpoint.js';
import type { AttemptResult, Destination } from './destinations/index.js';
import { parseEvent, type WarehouseEvent } from './event.js';
import { BUSY, type Lanes } from './lanes.js';
import type { EventsMetrics } from './metrics.js';
import {
  attemptsExhaustedMessage,
  endpointDisabledMessage,
  operatorPark,
  type OperatorMessage,
} from './operator.js';
import type { EventsRecord } from './record.js';
import type { DeadReason } from '../vocabulary.js';
import { notAttempted, notSentDisabled } from './not-attempted.js';
import {
  afterFailure,
  ATTEMPTS_HEADER,
  attemptsAt,
  attemptsOf,
  TARGET_HEADER,
  DEAD_AT_HEADER,
  DEAD_REASON_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
} from './retry.js';
import type { EventsTopology } from './topology.js';

/** A copy of the event to publish (with confirms) before the original is acknowledged. */
export interface Park {
  readonly queue: string;
  /** Replaces our own headers on the copy; the warehouse's headers are kept. */
  readonly headers: Readonly<Record<string, string | number>>;
  /**
   * The event's time (seconds) for a copy whose original had none: the arrival time stays the
   * event's time across retries, so its webhook body and outbound file name do not change.
   */
  readonly timestamp?: number;
  /** A message of its own instead of a copy of the event: an operator event (operator.ts). */
  readonly message?: OperatorMessage;
  /** Published with this park, in the same confirmed batch: the operator event it causes. */
  readonly notice?: Park | undefined;
}

export interface HandlerContext {
  readonly environment: 'production' | 'development' | 'sandbox';
  readonly endpoints: ReadonlyMap<string, readonly Destination[]>;
  readonly schedule: readonly number[];
  readonly circuit: CircuitSettings;
  readonly topology: EventsTopology;
  readonly lanes: Lanes;
  readonly metrics: EventsMetrics;
  /** What this worker knows of each endpoint (state/endpoint.ts). */
  readonly endpointStates: EndpointStates;
  /** The history's side of it (record.ts); absent when the history is off. */
  readonly record?: EventsRecord;
  /** Tells every worker an endpoint answered 410 (control.ts); absent in tests of one worker. */
  readonly announceGone?: (endpoint: Destination, at: number) => void;
  readonly log: Logger;
  /** Holds an arriving event against the event catalog (contract.ts); never stops its delivery. */
  readonly checkContract: (event: WarehouseEvent) => void;
}

const at = (delayMs: number) => new Date(Date.now() + delayMs).toISOString();

function dead(
  context: HandlerContext,
  reason: DeadReason,
  extra: Record<string, string | number> = {},
): Park {
  context.metrics.deadLetter(reason);
  return {
    queue: context.topology.deadQueue,
    headers: { [DEAD_REASON_HEADER]: reason, [DEAD_AT_HEADER]: new Date().toISOString(), ...extra },
  };
}

/**
 * The dead letter for an event whose handling threw (a defect, or input no check foresaw): it
 * leaves the delivery queue with the reason instead of blocking it.
 */
export function deadForDefect(
  context: HandlerContext,
  properties: MessageProperties,
  error: unknown,
): Park {
  const detail = `Handling failed: ${String((error as Error)?.message ?? error)
    .replace(/\s+/g, ' ')
    .slice(0, 300)}`;
  context.log.error(
    { eventId: String(properties.messageId ?? '').slice(0, 256), reason: detail },
    'event could not be handled: dead-lettered',
  );
  return dead(context, 'unhandled', { [LAST_FAILURE_HEADER]: detail });
}

/**
 * One event from the delivery queue: validated, matched to its business's endpoints, attempted
 * in each endpoint's lane. Returns what must be parked (retry, defer, dead) before the original
 * may be acknowledged; an empty list means every endpoint has it.
 */
export async function handleEvent(
  context: HandlerContext,
  content: Buffer,
  properties: MessageProperties,
): Promise<Park[]> {
  const parsed = parseEvent(content, properties, (id) => context.endpoints.has(id));
  if (!parsed.ok) {
    context.log.warn(
      { eventId: properties.messageId, reason: parsed.reason, detail: parsed.detail },
      'malformed event: dead-lettered',
    );
    return [dead(context, parsed.reason, { [LAST_FAILURE_HEADER]: parsed.detail })];
  }
  const { event } = parsed;
  const only = properties.headers?.[ENDPOINT_HEADER];
  // Once per event: a retry copy (it names its endpoint) was checked when it first arrived.
  if (only === undefined) context.checkContract(event);
  if (only === undefined) context.record?.received(event);
  const subscribed = (context.endpoints.get(event.businessId) ?? []).filter((endpoint) =>
    only === undefined ? endpoint.matches(event.type) : endpoint.id === String(only),
  );
  if (only !== undefined && subscribed.length === 0 && context.environment !== 'sandbox') {
    // A retry copy for an endpoint this worker no longer has: dead-lettered with that reason (and
    // replayable), never acked as unsubscribed — that would drop it without a trace.
    context.log.warn(
      { eventId: event.id, type: event.type, businessId: event.businessId },
      'retry for an endpoint no longer configured: dead-lettered',
    );
    return [
      dead(context, 'endpoint-removed', {
        [ENDPOINT_HEADER]: String(only),
        [ATTEMPTS_HEADER]: attemptsOf(properties.headers),
        [LAST_FAILURE_HEADER]:
          'No configured endpoint has this id (removed, disabled, or its URL changed without an id)',
      }),
    ].map((park) => ({ ...park, timestamp: Math.floor(event.occurredAt.getTime() / 1000) }));
  }
  if (context.environment === 'sandbox' || subscribed.length === 0) {
    context.metrics.delivery(
      context.environment === 'sandbox' ? 'sandbox' : 'unsubscribed',
      event.businessId,
    );
    return [];
  }
  // A retry copy's attempts count at the URL they were made at (`attemptsAt`).
  const attemptsMade = (endpoint: Destination) =>
    only === undefined ? 0 : attemptsAt(properties.headers, endpoint.target);
  // Most businesses have one endpoint: no Promise.all (and its arrays) for it.
  const parks =
    subscribed.length === 1
      ? [await forEndpoint(context, event, subscribed[0]!, attemptsMade(subscribed[0]!))]
      : await Promise.all(
          subscribed.map((endpoint) =>
            forEndpoint(context, event, endpoint, attemptsMade(endpoint)),
          ),
        );
  const timestamp = Math.floor(event.occurredAt.getTime() / 1000);
  return parks
    .filter((park): park is Park => park !== undefined)
    .flatMap(({ notice, ...park }) =>
      notice ? [{ ...park, timestamp }, notice] : [{ ...park, timestamp }],
    );
}

async function forEndpoint(
  context: HandlerContext,
  event: WarehouseEvent,
  endpoint: Destination,
  attemptsMade: number,
): Promise<Park | undefined> {
  const { metrics, endpointStates } = context;
  const attempt = attemptsMade + 1;
  // Fields of every line about this attempt; a plain object per line is cheaper than a child logger.
  const about = {
    eventId: event.id,
    type: event.type,
    businessId: event.businessId,
    endpoint: endpoint.host,
    attempt,
    // The warehouse's trace, as the inbound half's lines carry theirs.
    ...(event.trace ? { traceId: event.trace.traceId } : {}),
  };
  const log = context.log;
  const mine = {
    [ENDPOINT_HEADER]: endpoint.id,
    [ATTEMPTS_HEADER]: attemptsMade,
    [TARGET_HEADER]: endpoint.target,
  };
  const before = endpointStates.get(endpoint.id);
  const fresh = retargeted(before, endpoint.target);
  if (fresh !== before) {
    setEndpointState(context, endpoint, fresh);
    log.info(
      about,
      "endpoint's URL changed: its failures and back-off at the old one are forgotten",
    );
  }
  const { disabled, disabledBy } = endpointStates.get(endpoint.id);
  if (disabled) {
    metrics.delivery('dead', event.businessId);
    // Kept as a failed attempt (none was made): the partner sees why the event never came, and
    // `events recover` finds it after `enable` as it finds any event the endpoint missed.
    context.record?.attempted(endpoint, event, new Date(), 0, notSentDisabled(disabledBy));
    return dead(context, disabledBy === 'operator' ? 'endpoint-disabled' : 'endpoint-gone', mine);
  }
  // A backed-off endpoint is not even queued in its lane: its events move on at once.
  const { circuit } = endpointStates.get(endpoint.id);
  const result =
    decide(circuit, Date.now()) === 'skip'
      ? notAttempted(circuit)
      : await context.lanes.run(endpoint.id, () => attemptIn(context, endpoint, event, about));
  if (result === BUSY) {
    metrics.delivery('deferred', event.businessId);
    log.debug(about, 'endpoint busy: event parked without counting an attempt');
    const queue = context.topology.retryQueues.get(context.topology.deferMs) as string;
    return { queue, headers: { ...mine, [NEXT_ATTEMPT_HEADER]: at(context.topology.deferMs) } };
  }
  if (result.outcome === 'delivered') {
    metrics.delivery('delivered', event.businessId);
    const { state, recovered } = delivered(endpointStates.get(endpoint.id));
    setEndpointState(context, endpoint, state);
    if (recovered) log.info(about, 'endpoint recovered');
    log.info({ ...about, status: result.status, file: result.file }, 'event delivered');
    return undefined;
  }
  if (result.outcome === 'rejected') {
    metrics.delivery('dead', event.businessId);
    log.error(
      { ...about, reason: result.reason },
      'the event cannot be sent to this endpoint: dead-lettered at once (not counted against the endpoint)',
    );
    return dead(context, 'event-rejected', { ...mine, [LAST_FAILURE_HEADER]: result.reason });
  }
  if (result.outcome === 'aborted') {
    metrics.delivery('dead', event.businessId);
    log.warn(
      { ...about, reason: result.reason },
      'the receiver asked for no more attempts of this event: dead-lettered at once',
    );
    const aborted = { ...mine, [ATTEMPTS_HEADER]: attempt, [LAST_FAILURE_HEADER]: result.reason };
    return dead(context, 'receiver-aborted', aborted);
  }
  if (result.outcome === 'gone') {
    const now = Date.now();
    setEndpointState(context, endpoint, gone(endpointStates.get(endpoint.id), now));
    context.announceGone?.(endpoint, now);
    metrics.delivery('gone', event.businessId);
    log.error(
      about,
      'endpoint answered 410 Gone: disabled in every worker until `events enable` (or set enabled: false, or fix the receiver)',
    );
    const disabled = { disabledBy: 'gone', eventId: event.id, reason: 'HTTP 410' } as const;
    return {
      ...dead(context, 'endpoint-gone', mine),
      notice: operatorPark(context.endpoints, context.topology.queue, endpoint, (ref) =>
        endpointDisabledMessage({ businessId: event.businessId, endpoint: ref, ...disabled }),
      ),
    };
  }
  setEndpointState(
    context,
    endpoint,
    attemptFailed(endpointStates.get(endpoint.id), Date.now(), endpoint.target),
  );
  const failure = { ...mine, [ATTEMPTS_HEADER]: attempt, [LAST_FAILURE_HEADER]: result.reason };
  const next = afterFailure(context.schedule, attempt, result.retryAfterMs, [
    ...context.topology.retryQueues.keys(),
  ]);
  if (next.action === 'dead') {
    metrics.delivery('dead', event.businessId);
    log.error(
      { ...about, reason: result.reason },
      'delivery failed for the last time: dead-lettered',
    );
    const exhausted = {
      businessId: event.businessId,
      eventId: event.id,
      eventType: event.type,
      attempts: attempt,
      lastFailure: result.reason,
      deadLetterQueue: context.topology.deadQueue,
    };
    return {
      ...dead(context, 'attempts-exhausted', failure),
      notice: operatorPark(context.endpoints, context.topology.queue, endpoint, (ref) =>
        attemptsExhaustedMessage({ ...exhausted, endpoint: ref }),
      ),
    };
  }
  metrics.delivery('retrying', event.businessId);
  log.warn(
    { ...about, reason: result.reason, retryInMs: next.delayMs, retryAfterMs: result.retryAfterMs },
    'delivery failed: retry parked',
  );
  const queue = context.topology.retryQueues.get(next.delayMs) as string;
  return { queue, headers: { ...failure, [NEXT_ATTEMPT_HEADER]: at(next.delayMs) } };
}

/** Keeps an endpoint's new state, the gauge of endpoints per condition, and the history's row. */
export function setEndpointState(
  context: HandlerContext,
  endpoint: Destination,
  state: EndpointState,
): void {
  const before = context.endpointStates.get(endpoint.id);
  if (state === before) return;
  context.endpointStates.set(endpoint.id, state);
  context.record?.changed(endpoint, before, state);
  const counts = context.endpointStates.conditions();
  context.metrics.setEndpoints('failing', counts.failing);
  context.metrics.setEndpoints('backed-off', counts['backed-off']);
  context.metrics.setEndpoints('disabled', counts.disabled);
}

function setCircuit(context: HandlerContext, endpoint: Destination, circuit: Circuit): void {
  setEndpointState(
    context,
    endpoint,
    withCircuit(context.endpointStates.get(endpoint.id), circuit),
  );
}

/**
 * One attempt, in the endpoint's lane: the circuit is asked again (it may have opened while the
 * event waited), the attempt made and timed, and its end reported to the circuit.
 */
async function attemptIn(
  context: HandlerContext,
  endpoint: Destination,
  event: WarehouseEvent,
  about: Record<string, unknown>,
): Promise<AttemptResult> {
  const { endpointStates, metrics, log } = context;
  const { circuit } = endpointStates.get(endpoint.id);
  const decision = decide(circuit, Date.now());
  if (decision === 'skip') return notAttempted(circuit);
  if (decision === 'probe') {
    setCircuit(context, endpoint, probing(circuit));
    log.info(about, 'endpoint backed off: probing it with this event');
  }
  const end = metrics.attempt();
  const at = new Date();
  const started = performance.now();
  const outcome = await endpoint.attempt(event);
  end(outcome.outcome);
  context.record?.attempted(endpoint, event, at, performance.now() - started, outcome);
  const current = endpointStates.get(endpoint.id).circuit;
  if (outcome.outcome === 'rejected') {
    // Not the endpoint's doing: a probe that could not be made leaves the circuit as it was.
    if (decision === 'probe') setCircuit(context, endpoint, circuit);
  } else if (outcome.outcome === 'failed') {
    const next = failed(current, Date.now(), context.circuit);
    if (next.state === 'open' && current.state !== 'open')
      log.warn(
        { ...about, failures: next.failures, coolDownMs: next.coolDownMs },
        'endpoint keeps failing: backed off, its events move to their next retry without an attempt',
      );
    setCircuit(context, endpoint, next);
  } else if (current.failures > 0 || current.state !== 'closed')
    setCircuit(context, endpoint, succeeded(current));
  return outcome;
}
