import { describe, expect, it } from 'vitest';
import type { InputState } from '../../../src/drops/state/input-state.js';
import { OwedStates } from '../../../src/drops/try/owed.js';

/** The write-behind cache of states an outage kept from the store. */
const state = (sha256: string, updatedAt: string, attempts = 1) =>
  ({ sha256, updatedAt, attempts, status: 'retry-scheduled' }) as unknown as InputState;

describe('owed states', () => {
  it('the next try of the same bytes starts from the owed state when the store still holds the one it follows', () => {
    const owed = new OwedStates();
    const written = state('a', 't1');
    const next = state('a', 't2', 0);
    owed.owe(written, next);
    expect(owed.settle('a', written)).toBe(next);
    // Settled once: a second try reads what the store holds.
    expect(owed.settle('a', written)).toBe(written);
  });

  it('a state written since (another worker moved on) wins over the owed one', () => {
    const owed = new OwedStates();
    owed.owe(state('a', 't1'), state('a', 't2'));
    const movedOn = state('a', 't3', 4);
    expect(owed.settle('a', movedOn)).toBe(movedOn);
  });

  it('other bytes are untouched; the newest owed state of one input replaces the older', () => {
    const owed = new OwedStates();
    const written = state('a', 't1');
    owed.owe(written, state('a', 't2'));
    const newest = state('a', 't3');
    owed.owe(written, newest);
    const b = state('b', 't1');
    expect(owed.settle('b', b)).toBe(b);
    expect(owed.settle('a', written)).toBe(newest);
  });

  it('keeps at most 1000: the oldest is forgotten first', () => {
    const owed = new OwedStates();
    for (let i = 0; i <= 1000; i++) owed.owe(state(`s${i}`, 't1'), state(`s${i}`, 't2'));
    const first = state('s0', 't1');
    expect(owed.settle('s0', first)).toBe(first);
    expect(owed.settle('s1', state('s1', 't1'))?.updatedAt).toBe('t2');
  });
});
