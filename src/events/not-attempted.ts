/**
 * The failures an event is given without an attempt being made: its endpoint disabled (the
 * history keeps it, so the partner sees why the event never came), or backed off.
 */
import type { DisabledBy } from '../vocabulary.js';
import type { AttemptResult } from './destinations/index.js';
import type { Circuit } from './state/circuit.js';

/** The failure recorded for an event dead-lettered unsent because its endpoint is disabled. */
export function notSentDisabled(disabledBy: DisabledBy | undefined): AttemptResult {
  const why =
    disabledBy === 'operator'
      ? 'disabled by the operator (events disable)'
      : 'disabled after it answered 410 Gone';
  return {
    outcome: 'failed',
    reason: `Not attempted: endpoint ${why}; dead-lettered. After events enable, events recover (or replay) sends it.`,
  };
}

/** The failure recorded for an event not attempted because its endpoint is backed off. */
export function notAttempted(circuit: Circuit): AttemptResult {
  const since = circuit.failingSince ? new Date(circuit.failingSince).toISOString() : 'now';
  const until =
    circuit.state === 'open'
      ? `until ${new Date(circuit.until).toISOString()}`
      : 'while a probe is under way';
  return {
    outcome: 'failed',
    reason: `Not attempted: endpoint backed off after ${circuit.failures} failures in a row (failing since ${since}) ${until}`,
  };
}
