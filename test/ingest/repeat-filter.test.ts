import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MessageIds } from '../../src/ingest/message-id.js';
import { RepeatFilter } from '../../src/ingest/repeat-filter.js';

const digest = (n: number) => createHash('sha256').update(String(n)).digest();

describe('repeat filter', () => {
  it('names every digest that occurs more than once, and few of the others', () => {
    const filter = new RepeatFilter();
    const repeated = new Set([7, 4_000, 99_999, 150_000]);
    for (let n = 0; n < 200_000; n++) {
      const d = digest(n);
      filter.add(d);
      if (repeated.has(n)) filter.add(d);
    }
    for (const n of repeated) expect(filter.mayRepeat(digest(n).toString('hex'))).toBe(true);
    let falsePositives = 0;
    for (let n = 0; n < 200_000; n++)
      if (!repeated.has(n) && filter.mayRepeat(digest(n).toString('hex'))) falsePositives += 1;
    expect(falsePositives / 200_000).toBeLessThan(0.03);
  });

  it('gives a streamed batch exactly the ids that counting every record gives', () => {
    const records = Array.from({ length: 50_000 }, (_, i) => ({
      order: i % 20_000 === 3 ? 'same' : `o-${i}`,
    }));
    const bodies = records.map((r) => Buffer.from(JSON.stringify(r)));
    const exact = new MessageIds('ACME', 'sales-orders');
    const expected = records.map((r, i) => exact.forRecord(r, bodies[i]!));

    const filter = new RepeatFilter();
    const scan = new MessageIds('ACME', 'sales-orders');
    records.forEach((r, i) => {
      const d = scan.digest(r, bodies[i]!);
      filter.add(d);
    });
    const filtered = new MessageIds('ACME', 'sales-orders', [], (hex) => filter.mayRepeat(hex));
    expect(records.map((r, i) => filtered.forRecord(r, bodies[i]!))).toEqual(expected);
    expect(new Set(expected).size).toBe(records.length);
  });

  it('joins the filters of a batch read in two parts: ids as if one filter had seen it all', () => {
    // Repeats inside the first part, inside the second, and across them.
    const records = Array.from({ length: 40_000 }, (_, i) => ({
      order:
        i === 5 || i === 900
          ? 'first'
          : i === 30_000 || i === 39_999
            ? 'second'
            : i === 7 || i === 35_000
              ? 'across'
              : `o-${i}`,
    }));
    const bodies = records.map((r) => Buffer.from(JSON.stringify(r)));
    const exact = new MessageIds('ACME', 'sales-orders');
    const expected = records.map((r, i) => exact.forRecord(r, bodies[i]!));

    const scan = new MessageIds('ACME', 'sales-orders');
    const [first, second] = [new RepeatFilter(), new RepeatFilter()];
    records.forEach((r, i) => {
      (i < 20_000 ? first : second).add(scan.digest(r, bodies[i]!));
    });
    // The second filter as another thread hands it over: plain data.
    const handed = RepeatFilter.imported(structuredClone(second.exported()));
    const union = RepeatFilter.union(first, handed);
    const ids = new MessageIds('ACME', 'sales-orders', [], (hex) => union.mayRepeat(hex));
    expect(records.map((r, i) => ids.forRecord(r, bodies[i]!))).toEqual(expected);
    expect(new Set(expected).size).toBe(records.length);
    // Without the cross check, the record in both parts would get one id twice.
    const apart = new MessageIds(
      'ACME',
      'sales-orders',
      [],
      (hex) => first.mayRepeat(hex) || handed.mayRepeat(hex),
    );
    expect(new Set(records.map((r, i) => apart.forRecord(r, bodies[i]!))).size).toBe(
      records.length - 1,
    );
  });
});
