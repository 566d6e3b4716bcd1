import { describe, expect, it } from 'vitest';
import { failedByName, type NameMemory, seenByName } from '../../../src/drops/state/by-name.js';

/** What a worker remembers of a file by name, alone: pure transitions, no store, no clock. */
const NOW = 1_000_000;
const facts = { size: 10, modifiedMs: 5 };
const options = { now: NOW, maxAttempts: 3, delayMs: (n: number) => 100 * 2 ** n, facts };

function failTimes(kinds: ('outage' | 'error')[]): NameMemory | undefined {
  let memory: NameMemory | undefined;
  for (const kind of kinds) memory = failedByName(memory, { kind }, options);
  return memory;
}

describe('memory of a file by name', () => {
  it('an error before the bytes were known backs off by the caller’s delay, and counts', () => {
    expect(failTimes(['error'])).toEqual({
      status: 'backing-off',
      failures: 1,
      counted: 1,
      notBefore: NOW + 100,
    });
    expect(failTimes(['error', 'error'])).toMatchObject({ failures: 2, notBefore: NOW + 200 });
  });

  it('parks the file at retry.maxAttempts counted failures, with its facts as they were', () => {
    expect(failTimes(['error', 'error', 'error'])).toEqual({
      status: 'parked',
      size: 10,
      modifiedMs: 5,
    });
  });

  it('an outage spaces retries out but never parks', () => {
    const memory = failTimes(['outage', 'outage', 'outage', 'outage', 'outage']);
    expect(memory).toEqual({
      status: 'backing-off',
      failures: 5,
      counted: 0,
      notBefore: NOW + 1600,
    });
    // Outages between errors do not count either: two errors are still below the limit.
    expect(failTimes(['error', 'outage', 'outage', 'error'])).toMatchObject({
      status: 'backing-off',
      counted: 2,
    });
  });

  it('a scheduled retry caches the state’s due time and counts nothing', () => {
    const memory = failedByName(
      failTimes(['error']),
      { kind: 'scheduled', notBefore: NOW + 7 },
      options,
    );
    expect(memory).toEqual({ status: 'backing-off', failures: 2, counted: 1, notBefore: NOW + 7 });
  });

  it('seen again: waits while backing off, is free once due', () => {
    const memory = failTimes(['error']);
    expect(seenByName(memory, facts, NOW + 99)).toEqual({ wait: 'backing-off', memory });
    expect(seenByName(memory, facts, NOW + 100)).toEqual({ wait: undefined, memory });
    expect(seenByName(undefined, facts, NOW)).toEqual({ wait: undefined, memory: undefined });
  });

  it('a parked file stays parked until its size or time changes, then is forgotten', () => {
    const parked = failTimes(['error', 'error', 'error']);
    expect(seenByName(parked, facts, NOW + 1e9)).toEqual({ wait: 'parked', memory: parked });
    expect(seenByName(parked, { size: 11, modifiedMs: 5 }, NOW)).toEqual({
      wait: undefined,
      memory: undefined,
    });
    expect(seenByName(parked, { size: 10, modifiedMs: 6 }, NOW).memory).toBeUndefined();
  });

  it('a failure after being forgotten starts counting again from nothing', () => {
    const again = failedByName(
      { status: 'parked', size: 1, modifiedMs: 1 },
      { kind: 'error' },
      options,
    );
    expect(again).toMatchObject({ status: 'backing-off', failures: 1, counted: 1 });
  });

  it('a file parked before its facts were seen is parked with unknown facts (any sighting frees it)', () => {
    let memory: NameMemory | undefined;
    for (let i = 0; i < 3; i++)
      memory = failedByName(memory, { kind: 'error' }, { ...options, facts: undefined });
    expect(memory).toEqual({ status: 'parked', size: -1, modifiedMs: -1 });
    expect(seenByName(memory, facts, NOW).wait).toBeUndefined();
  });
});
