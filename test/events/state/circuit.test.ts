import { describe, expect, it } from 'vitest';
import {
  CLOSED,
  decide,
  failed,
  isBackedOff,
  probing,
  succeeded,
  type Circuit,
} from '../../../src/events/state/circuit.js';

const settings = { threshold: 3, coolDownMs: 1000, maxCoolDownMs: 3000 };

/** `n` failures at `now`, from `circuit`. */
const failTimes = (circuit: Circuit, n: number, now: number) => {
  let c = circuit;
  for (let i = 0; i < n; i++) c = failed(c, now, settings);
  return c;
};

describe('circuit (pure transitions)', () => {
  it('stays closed and attempting below the threshold, remembering when the failures began', () => {
    const c = failTimes(CLOSED, 2, 100);
    expect(c).toEqual({ state: 'closed', failures: 2, failingSince: 100 });
    expect(decide(c, 100)).toBe('attempt');
    expect(isBackedOff(c)).toBe(false);
  });

  it('opens at the threshold: skips until the cool-down ends', () => {
    const c = failTimes(failTimes(CLOSED, 2, 100), 1, 500);
    expect(c).toEqual({
      state: 'open',
      failures: 3,
      failingSince: 100,
      until: 1500,
      coolDownMs: 1000,
    });
    expect(decide(c, 1499)).toBe('skip');
    expect(isBackedOff(c)).toBe(true);
  });

  it('after the cool-down lets one probe through, skipping the rest while it runs', () => {
    const open = failTimes(CLOSED, 3, 0);
    expect(decide(open, 1000)).toBe('probe');
    const probe = probing(open);
    expect(probe.state).toBe('half-open');
    expect(decide(probe, 5000)).toBe('skip');
  });

  it('closes on a successful probe, forgetting the failures', () => {
    expect(succeeded(probing(failTimes(CLOSED, 3, 0)))).toBe(CLOSED);
  });

  it('reopens on a failed probe for twice the cool-down, never beyond the maximum', () => {
    let c = failTimes(CLOSED, 3, 0);
    const coolDowns: number[] = [];
    let now = 0;
    for (let i = 0; i < 4; i++) {
      now = (c as { until: number }).until;
      c = failed(probing(c), now, settings);
      coolDowns.push((c as { coolDownMs: number }).coolDownMs);
      expect(c).toMatchObject({ state: 'open', failingSince: 0, until: now + coolDowns.at(-1)! });
    }
    expect(coolDowns).toEqual([2000, 3000, 3000, 3000]);
  });

  it('a late failure while open keeps the cool-down; any success closes', () => {
    const open = failTimes(CLOSED, 3, 0);
    const later = failed(open, 900, settings);
    expect(later).toMatchObject({ state: 'open', until: 1000, failures: 4 });
    expect(succeeded(later)).toBe(CLOSED);
    expect(succeeded(failTimes(CLOSED, 1, 0))).toBe(CLOSED);
  });

  it('probing a circuit that is not open changes nothing', () => {
    expect(probing(CLOSED)).toBe(CLOSED);
  });
});
