/**
 * What the outbound half tells the history (history/store.ts): each event once, when it first
 * arrives (a retry copy is not a new arrival); every attempt at an endpoint; an endpoint's state
 * whenever it changes in a way another worker or an operator cares about (disabled or enabled,
 * failing or recovered, backed off or not). Only queued on the writer: delivery never waits on
 * the history, and goes on while it is unreachable. Nothing secret is written: no signature, no
 * secret, no request header; an answer's body only as its first characters.
 */
import type { AttemptEntry, EndpointStateEntry, HistoryWrites } from '../history/store.js';
import type { AttemptResult, Destination } from './destinations/index.js';
import type { WarehouseEvent } from './event.js';
import type { EndpointState } from './state/endpoint.js';
import { timeOrderedId } from '../ids.js';

/** Where the rows go: the history's writer (`add` only queues). */
export interface HistorySink {
  add(writes: HistoryWrites): void;
}

export interface EventsRecord {
  received(event: WarehouseEvent): void;
  attempted(
    endpoint: Destination,
    event: WarehouseEvent,
    at: Date,
    durationMs: number,
    result: AttemptResult,
  ): void;
  /** `endpoint` went from `before` to `after` in this worker. */
  changed(endpoint: Destination, before: EndpointState, after: EndpointState): void;
}

/** The row of an endpoint's state, as of `at`. */
export function endpointStateEntry(
  endpoint: Pick<Destination, 'businessId' | 'name'>,
  state: EndpointState,
  at: Date,
): EndpointStateEntry {
  return {
    businessId: endpoint.businessId,
    endpoint: endpoint.name,
    enabled: !state.disabled,
    ...(state.disabled && state.disabledBy && { disabledBy: state.disabledBy }),
    ...(state.failingSince !== undefined && { failingSince: new Date(state.failingSince) }),
    circuit: state.circuit.state,
    updatedAt: at,
  };
}

/** The row of one attempt: how it ended, never a request header or a signature. */
export function attemptEntry(
  endpoint: Pick<Destination, 'name'>,
  event: Pick<WarehouseEvent, 'id' | 'businessId'>,
  at: Date,
  durationMs: number,
  result: AttemptResult,
): AttemptEntry {
  return {
    id: timeOrderedId(at.getTime()),
    eventId: event.id,
    businessId: event.businessId,
    endpoint: endpoint.name,
    at,
    end: result.outcome,
    durationMs,
    ...('status' in result && result.status !== undefined && { status: result.status }),
    ...('excerpt' in result && result.excerpt && { responseExcerpt: result.excerpt }),
    ...('reason' in result && { error: result.reason }),
  };
}

/** Whether the change is one the history keeps (not a failure counted in a run already failing). */
function matters(before: EndpointState, after: EndpointState): boolean {
  return (
    before.disabled !== after.disabled ||
    before.disabledBy !== after.disabledBy ||
    before.failingSince !== after.failingSince ||
    before.circuit.state !== after.circuit.state
  );
}

export function historyRecord(sink: HistorySink): EventsRecord {
  return {
    received(event) {
      sink.add({
        events: [
          {
            id: event.id,
            type: event.type,
            businessId: event.businessId,
            payload: event.data,
            receivedAt: new Date(),
            occurredAt: event.occurredAt,
            ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
            ...(event.messageIds !== undefined && { messageIds: event.messageIds }),
          },
        ],
      });
    },
    attempted(endpoint, event, at, durationMs, result) {
      sink.add({ attempts: [attemptEntry(endpoint, event, at, durationMs, result)] });
    },
    changed(endpoint, before, after) {
      // Stamped now, not with the decision's time: this worker's rows are then in order, so a
      // disable it applies after writing an older state of its own is the row that stays.
      if (matters(before, after))
        sink.add({ endpointStates: [endpointStateEntry(endpoint, after, new Date())] });
    },
  };
}
