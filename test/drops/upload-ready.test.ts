import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createReadiness, globToRegExp } from '../../src/drops/upload-ready.js';

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
  it('stable: ready after `checks` unchanged looks, even when written within the current millisecond', () => {
    const r = readinessOf({ strategy: 'stable', checks: 2 });
    expect(r.look([file('a.csv')], 1_000_000)).toEqual({ ready: [], settling: 1 });
    expect(r.look([file('a.csv')], 1_000_000).ready.map((e) => e.name)).toEqual(['a.csv']);
  });

  it('stable: a change in size or mtime starts the count again', () => {
    const r = readinessOf({ strategy: 'stable', checks: 2 });
    r.look([file('a.csv', 10)], 5);
    expect(r.look([file('a.csv', 20)], 6).ready).toEqual([]);
    expect(r.look([file('a.csv', 20, 7)], 7).ready).toEqual([]);
    expect(r.look([file('a.csv', 20, 7)], 8).ready).toHaveLength(1);
  });

  it('minimum age holds a file back until it is old enough', () => {
    const r = readinessOf({ strategy: 'rename', minAgeMs: 1000 });
    expect(r.look([file('a.csv', 1, 10_000)], 10_500)).toEqual({ ready: [], settling: 1 });
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

  it('matches globs with * and ? only', () => {
    expect(globToRegExp('rga-*.json').test('rga-1.json')).toBe(true);
    expect(globToRegExp('rga-?.json').test('rga-12.json')).toBe(false);
    expect(globToRegExp('a.csv').test('abcsv')).toBe(false);
  });
});
