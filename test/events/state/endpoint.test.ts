import { describe, expect, it } from 'vitest';
import { failed, type CircuitSettings } from '../../../src/events/state/circuit.js';
import {
  attemptFailed,
  conditions,
  delivered,
  disabled as disable,
  enabled,
  EndpointStates,
  gone,
  HEALTHY,
  retargeted,
  withCircuit,
} from '../../../src/events/state/endpoint.js';
import { ATTEMPTS_HEADER, attemptsAt, TARGET_HEADER } from '../../../src/events/retry.js';

/** What a worker knows of one endpoint, alone: pure transitions, no network, no clock. */
const settings: CircuitSettings = { threshold: 2, coolDownMs: 1000, maxCoolDownMs: 8000 };

describe('endpoint state', () => {
  it('a failed attempt starts a run of failures; later ones keep when it began', () => {
    const failing = attemptFailed(HEALTHY, 100, 'url-a');
    expect(failing.failingSince).toBe(100);
    expect(attemptFailed(failing, 500, 'url-a').failingSince).toBe(100);
  });

  it('a delivery ends the run (recovered) and counts; a delivery without a run is no recovery', () => {
    const first = delivered(attemptFailed(HEALTHY, 100, 'url-a'));
    expect(first.recovered).toBe(true);
    expect(first.state).toEqual({ ...HEALTHY, delivered: 1 });
    expect(first.state).not.toHaveProperty('failingSince');
    const second = delivered(first.state);
    expect(second).toEqual({ state: { ...HEALTHY, delivered: 2 }, recovered: false });
  });

  it('410 disables it (by gone), and a delivery does not enable it again', () => {
    const disabled = gone(attemptFailed(HEALTHY, 1, 'url-a'), 5);
    expect(disabled).toMatchObject({ disabled: true, disabledBy: 'gone', changedAt: 5 });
    expect(delivered(disabled).state.disabled).toBe(true);
  });

  it('an operator disables it; enabling is a fresh start (no failures, circuit closed)', () => {
    const open = withCircuit(
      attemptFailed(HEALTHY, 1, 'url-a'),
      failed(failed({ state: 'closed', failures: 0 }, 1, settings), 2, settings),
    );
    const off = disable(open, 'operator', 10);
    expect(off).toMatchObject({ disabled: true, disabledBy: 'operator', changedAt: 10 });
    const on = enabled(off, 20);
    expect(on).toEqual({ circuit: HEALTHY.circuit, disabled: false, delivered: 0, changedAt: 20 });
    expect(on).not.toHaveProperty('failingSince');
    expect(on).not.toHaveProperty('disabledBy');
  });

  it("a URL fix forgets the old URL's failures and back-off, and keeps an operator's decision", () => {
    const backedOff = withCircuit(
      attemptFailed(HEALTHY, 1, 'url-a'),
      failed(failed({ state: 'closed', failures: 0 }, 1, settings), 2, settings),
    );
    expect(backedOff.circuit.state).toBe('open');
    // The same URL: nothing changes.
    expect(retargeted(backedOff, 'url-a')).toBe(backedOff);
    const fixed = retargeted(backedOff, 'url-b');
    expect(fixed).toEqual({ circuit: HEALTHY.circuit, disabled: false, delivered: 0 });
    expect(conditions([fixed])).toEqual({ failing: 0, 'backed-off': 0, disabled: 0 });
    // A failure at the new URL starts a run of its own.
    expect(attemptFailed(fixed, 50, 'url-b')).toMatchObject({ failingSince: 50, target: 'url-b' });
    const off = disable(backedOff, 'operator', 10);
    expect(retargeted(off, 'url-b')).toMatchObject({ disabled: true, disabledBy: 'operator' });
    expect(retargeted(HEALTHY, 'url-b')).toBe(HEALTHY);
  });

  it("an event's attempts count at the URL they were made at: a fixed URL gets the whole schedule", () => {
    const parked = { [ATTEMPTS_HEADER]: 4, [TARGET_HEADER]: 'url-a' };
    expect(attemptsAt(parked, 'url-a')).toBe(4);
    expect(attemptsAt(parked, 'url-b')).toBe(0);
    // Parked by an earlier version, which named no URL: its count stands.
    expect(attemptsAt({ [ATTEMPTS_HEADER]: 4 }, 'url-b')).toBe(4);
    expect(attemptsAt(undefined, 'url-b')).toBe(0);
  });

  it('a decision older than the one applied changes nothing, whichever comes late', () => {
    const on = enabled(gone(HEALTHY, 10), 20);
    expect(disable(on, 'gone', 15)).toBe(on);
    const off = disable(enabled(HEALTHY, 10), 'operator', 30);
    expect(enabled(off, 25)).toBe(off);
    expect(enabled(off, 30).disabled).toBe(false);
  });

  it('the same decision told twice (a worker hears its own word) is no change', () => {
    const off = gone(HEALTHY, 10);
    expect(disable(off, 'gone', 10)).toBe(off);
    const on = enabled(off, 20);
    expect(enabled(on, 20)).toBe(on);
  });

  it('counts endpoints per condition for the gauge', () => {
    const open = withCircuit(
      attemptFailed(HEALTHY, 1, 'url-a'),
      failed(failed({ state: 'closed', failures: 0 }, 1, settings), 2, settings),
    );
    expect(open.circuit.state).toBe('open');
    expect(
      conditions([HEALTHY, open, gone(HEALTHY, 1), attemptFailed(HEALTHY, 3, 'url-a')]),
    ).toEqual({
      failing: 2,
      'backed-off': 1,
      disabled: 1,
    });
  });

  it('the table forgets an endpoint back to healthy with nothing to report, keeps any other', () => {
    const states = new EndpointStates();
    states.set('a', attemptFailed(HEALTHY, 1, 'url-a'));
    states.set('b', delivered(HEALTHY).state);
    expect([...states.entries()].map(([id]) => id)).toEqual(['a', 'b']);
    expect(states.conditions().failing).toBe(1);
    states.set('a', HEALTHY);
    expect(states.get('a')).toBe(HEALTHY);
    expect([...states.entries()].map(([id]) => id)).toEqual(['b']);
  });
});
