import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createReadiness, namePattern } from '../../src/drops/upload-ready.js';

const readinessOf = (readiness: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  createReadiness(
    pipelineSchema.parse({
      name: 'p',
      businessId: 'A',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: '/x' },
      readiness,
      ...extra,
    }),
  );
const file = (name: string, size = 10, modifiedMs = 1_000_000.5) => ({ name, size, modifiedMs });

describe('readiness', () => {
  it('stable (the default): two unchanged looks close together are not enough; looks spanning the quiet period are', () => {
    const r = readinessOf({});
    const at = 1_000_000;
    expect(r.look([file('a.csv')], at)).toMatchObject({ ready: [], arriving: 1 });
    // A writer pausing between rows: unchanged over 2 looks 1.5 s apart, but still being written.
    expect(r.look([file('a.csv')], at + 1_500)).toMatchObject({ ready: [], arriving: 1 });
    expect(r.look([file('a.csv')], at + 29_999).ready).toEqual([]);
    expect(r.look([file('a.csv')], at + 30_000).ready.map((e) => e.name)).toEqual(['a.csv']);
    // It grew: the quiet period starts again from the look that saw it grown.
    expect(r.look([file('a.csv', 20)], at + 31_000).ready).toEqual([]);
    expect(r.look([file('a.csv', 20)], at + 60_999).ready).toEqual([]);
    expect(r.look([file('a.csv', 20)], at + 61_000).ready).toHaveLength(1);
  });

  it('stable: quietMs is configurable, and run --once waits at least that long', () => {
    const r = readinessOf({ quietMs: 5_000, intervalMs: 100, checks: 2 });
    expect(r.longestWaitMs).toBeGreaterThanOrEqual(5_000);
    expect(readinessOf({}).longestWaitMs).toBeGreaterThanOrEqual(30_000);
    r.look([file('a.csv')], 0);
    expect(r.look([file('a.csv')], 4_999).ready).toEqual([]);
    expect(r.look([file('a.csv')], 5_000).ready).toHaveLength(1);
  });

  it('stable with quietMs 0: ready after `checks` unchanged looks, even when written within the current millisecond', () => {
    const r = readinessOf({ strategy: 'stable', checks: 2, quietMs: 0 });
    expect(r.look([file('a.csv')], 1_000_000)).toMatchObject({ ready: [], arriving: 1 });
    expect(r.look([file('a.csv')], 1_000_000).ready.map((e) => e.name)).toEqual(['a.csv']);
  });

  it('stable: a change in size or mtime starts the count again', () => {
    const r = readinessOf({ strategy: 'stable', checks: 2, quietMs: 0 });
    r.look([file('a.csv', 10)], 5);
    expect(r.look([file('a.csv', 20)], 6).ready).toEqual([]);
    expect(r.look([file('a.csv', 20, 7)], 7).ready).toEqual([]);
    expect(r.look([file('a.csv', 20, 7)], 8).ready).toHaveLength(1);
  });

  it('minimum age holds a file back until it is old enough', () => {
    const r = readinessOf({ strategy: 'rename', minAgeMs: 1000 });
    expect(r.look([file('a.csv', 1, 10_000)], 10_500)).toMatchObject({ ready: [], arriving: 1 });
    expect(r.look([file('a.csv', 1, 10_000)], 11_000).ready).toHaveLength(1);
  });

  it('marker: ready only when the marker exists; the marker itself is no input', () => {
    const r = readinessOf({ strategy: 'marker' });
    expect(r.look([file('a.csv')], 1).ready).toEqual([]);
    expect(r.look([file('a.csv'), file('a.csv.done', 0)], 2).ready.map((e) => e.name)).toEqual([
      'a.csv',
    ]);
  });

  it('never takes temporary names, hidden files, receipts or other patterns', () => {
    const r = readinessOf({ strategy: 'rename' });
    const names = [
      'a.csv.part',
      'a.csv.tmp',
      '.hidden.csv',
      'a.csv.receipt.json',
      'notes.txt',
      'b.csv',
      'line\nbreak.csv',
    ];
    expect(
      r
        .look(
          names.map((n) => file(n)),
          1,
        )
        .ready.map((e) => e.name),
    ).toEqual(['b.csv', 'line\nbreak.csv']);
  });

  it('matches globs with picomatch: *, ?, classes and braces, on names with any characters', () => {
    expect(namePattern('rga-*.json')('rga-1.json')).toBe(true);
    expect(namePattern('rga-?.json')('rga-12.json')).toBe(false);
    expect(namePattern('a.csv')('abcsv')).toBe(false);
    expect(namePattern('orders-[0-9][0-9].csv')('orders-07.csv')).toBe(true);
    expect(namePattern('orders-[0-9][0-9].csv')('orders-ab.csv')).toBe(false);
    expect(namePattern('{orders,returns}-*.csv')('returns-1.csv')).toBe(true);
    expect(namePattern('{orders,returns}-*.csv')('stock-1.csv')).toBe(false);
    expect(namePattern('*.csv')('a\\b.csv')).toBe(true);
  });
});
