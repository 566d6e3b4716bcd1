import type { DisabledBy, EndpointCondition } from '../../vocabulary.js';
import { CLOSED, isBackedOff, type Circuit } from './circuit.js';

/**
 * What one worker knows of one destination (a webhook endpoint or an outbound folder), as pure
 * transitions: the handler keeps one `EndpointState` per endpoint id (`EndpointStates`) and
 * reports each attempt's end. Disabling and enabling are told to every worker (control.ts) and
 * kept in the history, so a disabled endpoint stays disabled across workers and restarts; the
 * rest (failures, circuit, deliveries) is this worker's own.
 *
 *     healthy ─ attempt failed ─→ failing ─ delivered, or its URL changed ─→ healthy
 *        └──────────┴── answered 410, or `events disable` ─→ disabled (no more attempts)
 *                                        `events enable` ─→ healthy
 *
 * Disabling and enabling carry the time they were decided (`changedAt`): a word older than the
 * one this worker applied (a late start-up read of the history, a slow control message) changes
 * nothing, so every worker ends in the state of the newest decision.
 *
 * The circuit (circuit.ts) is part of it: whether attempts are made at all while it keeps failing.
 */
export interface EndpointState {
  readonly circuit: Circuit;
  /** Answered 410 Gone, or disabled by an operator: its events are dead-lettered without an attempt. */
  readonly disabled: boolean;
  /** Who disabled it (while `disabled`). */
  readonly disabledBy?: DisabledBy;
  /** When it was last disabled or enabled (ms since the epoch). */
  readonly changedAt?: number;
  /** When its current run of failures began (ms since the epoch); absent once it delivers. */
  readonly failingSince?: number;
  /** Events delivered by this worker since it started (for `events status`). */
  readonly delivered: number;
  /** Where its run of failures was met (`Destination.target`); absent while it has none. */
  readonly target?: string;
}

export const HEALTHY: EndpointState = { circuit: CLOSED, disabled: false, delivered: 0 };

/** An event was delivered: the run of failures is over (`recovered`: there was one). */
export function delivered(state: EndpointState): { state: EndpointState; recovered: boolean } {
  const { failingSince: _, target: __, ...rest } = state;
  return {
    state: { ...rest, delivered: state.delivered + 1 },
    recovered: state.failingSince !== undefined,
  };
}

/**
 * An attempt at `target` failed at `now`: a run of failures begins, or goes on from when it
 * began.
 */
export function attemptFailed(state: EndpointState, now: number, target: string): EndpointState {
  if (state.failingSince !== undefined && state.target === target) return state;
  return { ...state, failingSince: state.failingSince ?? now, target };
}

/**
 * The endpoint delivers to `target` now (its URL was fixed, a reload): failures met at another
 * one are forgotten — no run of failures, the circuit closed — so the new URL is tried at once.
 * Disabling is an operator's or a 410's decision and stays.
 */
export function retargeted(state: EndpointState, target: string): EndpointState {
  if (state.target === undefined || state.target === target) return state;
  const { failingSince: _, target: __, ...rest } = state;
  return { ...rest, circuit: CLOSED };
}

/** Disabled by `by` at `at`, unless a newer decision was applied already. */
export function disabled(state: EndpointState, by: DisabledBy, at: number): EndpointState {
  if (state.changedAt !== undefined && at < state.changedAt) return state;
  if (state.disabled && state.disabledBy === by && state.changedAt === at) return state;
  return { ...state, disabled: true, disabledBy: by, changedAt: at };
}

/** It answered 410 Gone at `now`: disabled. */
export function gone(state: EndpointState, now: number): EndpointState {
  return disabled(state, 'gone', now);
}

/**
 * Enabled at `at` (`events enable`), unless a newer decision was applied already: a fresh start,
 * with no failures counted and the circuit closed.
 */
export function enabled(state: EndpointState, at: number): EndpointState {
  if (state.changedAt !== undefined && at < state.changedAt) return state;
  if (!state.disabled) return state.changedAt === at ? state : { ...state, changedAt: at };
  return { circuit: CLOSED, disabled: false, delivered: state.delivered, changedAt: at };
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
