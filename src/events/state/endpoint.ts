import type { EndpointCondition } from '../../vocabulary.js';
import { CLOSED, isBackedOff, type Circuit } from './circuit.js';

/**
 * What one worker knows of one destination (a webhook endpoint or an outbound folder), as pure
 * transitions: the handler keeps one `EndpointState` per endpoint id (`EndpointStates`) and
 * reports each attempt's end. In memory, per worker: a restart forgets a disabled endpoint
 * (docs/events.md "Disabled endpoints" says so).
 *
 *     healthy ─ attempt failed ─→ failing ─ delivered ─→ healthy
 *        └──────────┴────── answered 410 ─→ disabled (no more attempts)
 *
 * The circuit (circuit.ts) is part of it: whether attempts are made at all while it keeps failing.
 */
export interface EndpointState {
  readonly circuit: Circuit;
  /** Answered 410 Gone: its events are dead-lettered without an attempt. */
  readonly disabled: boolean;
  /** When its current run of failures began (ms since the epoch); absent once it delivers. */
  readonly failingSince?: number;
  /** Events delivered by this worker since it started (for `events status`). */
  readonly delivered: number;
}

export const HEALTHY: EndpointState = { circuit: CLOSED, disabled: false, delivered: 0 };

/** An event was delivered: the run of failures is over (`recovered`: there was one). */
export function delivered(state: EndpointState): { state: EndpointState; recovered: boolean } {
  const { failingSince: _, ...rest } = state;
  return {
    state: { ...rest, delivered: state.delivered + 1 },
    recovered: state.failingSince !== undefined,
  };
}

/** An attempt failed at `now`: a run of failures begins, or goes on from when it began. */
export function attemptFailed(state: EndpointState, now: number): EndpointState {
  return state.failingSince === undefined ? { ...state, failingSince: now } : state;
}

/** It answered 410 Gone: disabled. */
export function gone(state: EndpointState): EndpointState {
  return { ...state, disabled: true };
}

export function withCircuit(state: EndpointState, circuit: Circuit): EndpointState {
  return { ...state, circuit };
}

/** How many endpoints are in each condition (the `warehouse_ingest_event_endpoints` gauge). */
export function conditions(states: Iterable<EndpointState>): Record<EndpointCondition, number> {
  const counts: Record<EndpointCondition, number> = { failing: 0, 'backed-off': 0, disabled: 0 };
  for (const state of states) {
    if (state.failingSince !== undefined) counts.failing += 1;
    if (isBackedOff(state.circuit)) counts['backed-off'] += 1;
    if (state.disabled) counts.disabled += 1;
  }
  return counts;
}

/** The states of every endpoint this worker has something to say about, by endpoint id. */
export class EndpointStates {
  readonly #states = new Map<string, EndpointState>();

  get(id: string): EndpointState {
    return this.#states.get(id) ?? HEALTHY;
  }

  /** Keeps `state` for `id`; an endpoint back to healthy with nothing to report is forgotten. */
  set(id: string, state: EndpointState): void {
    if (state === HEALTHY) this.#states.delete(id);
    else this.#states.set(id, state);
  }

  entries(): IterableIterator<[string, EndpointState]> {
    return this.#states.entries();
  }

  conditions(): Record<EndpointCondition, number> {
    return conditions(this.#states.values());
  }
}
