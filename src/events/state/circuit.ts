/**
 * Backing off an endpoint that keeps failing, as a whole (a circuit breaker), as pure
 * transitions: the handler keeps one `Circuit` per endpoint and worker, asks `decide` before an
 * attempt and reports each attempt's end with `succeeded` or `failed`.
 *
 * - `closed`: attempts are made; `threshold` failures in a row open it.
 * - `open`: no attempt until `until` — events go to their next retry step without a network
 *   attempt (docs/events.md "Backing off a failing endpoint" says why not held or deferred).
 * - when `until` has passed, the next event is the **probe** (`half-open`): the only attempt in
 *   flight; others are still skipped. Success closes the circuit; failure opens it again for
 *   twice the cool-down, up to `maxCoolDownMs`.
 *
 * Any success closes it, also a late one from an attempt begun before it opened: the endpoint
 * answers, so hammering is no longer the risk.
 */

export interface CircuitSettings {
  /** Failures in a row that open the circuit. */
  readonly threshold: number;
  /** First cool-down, in ms; doubled after each failed probe. */
  readonly coolDownMs: number;
  readonly maxCoolDownMs: number;
}

export type Circuit =
  | { readonly state: 'closed'; readonly failures: number; readonly failingSince?: number }
  | {
      readonly state: 'open';
      readonly failures: number;
      readonly failingSince: number;
      /** No attempt before this time (ms since the epoch). */
      readonly until: number;
      readonly coolDownMs: number;
    }
  | {
      readonly state: 'half-open';
      readonly failures: number;
      readonly failingSince: number;
      readonly coolDownMs: number;
    };

export const CLOSED: Circuit = { state: 'closed', failures: 0 };

/** What to do with the next event for the endpoint. */
export type Decision = 'attempt' | 'probe' | 'skip';

export function decide(circuit: Circuit, now: number): Decision {
  if (circuit.state === 'closed') return 'attempt';
  if (circuit.state === 'half-open') return 'skip';
  return now >= circuit.until ? 'probe' : 'skip';
}

/** The probe is under way: further events are skipped until it ends. */
export function probing(circuit: Circuit): Circuit {
  if (circuit.state !== 'open') return circuit;
  const { failures, failingSince, coolDownMs } = circuit;
  return { state: 'half-open', failures, failingSince, coolDownMs };
}

export function succeeded(_circuit: Circuit): Circuit {
  return CLOSED;
}

export function failed(circuit: Circuit, now: number, settings: CircuitSettings): Circuit {
  const failures = circuit.failures + 1;
  const failingSince = circuit.failingSince ?? now;
  if (circuit.state === 'half-open') {
    const coolDownMs = Math.min(circuit.coolDownMs * 2, settings.maxCoolDownMs);
    return { state: 'open', failures, failingSince, until: now + coolDownMs, coolDownMs };
  }
  if (circuit.state === 'open') return { ...circuit, failures };
  if (failures < settings.threshold) return { state: 'closed', failures, failingSince };
  const coolDownMs = settings.coolDownMs;
  return { state: 'open', failures, failingSince, until: now + coolDownMs, coolDownMs };
}

/** Whether the endpoint is backed off now (open, or a probe under way). */
export const isBackedOff = (circuit: Circuit) => circuit.state !== 'closed';
