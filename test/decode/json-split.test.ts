/**
 * Cutting a v2-JSON file in two (src/decode/json-split.ts): each half, read on its own as
 * `readHalf` reads it, must give exactly the records of one pass, in order; a file with no place
 * to cut gets none, and a half whose bytes are broken fails (so the caller reads the file in one
 * pass, which words the error).
 */
import { createReadStream, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Candidate } from '../../src/decode/candidate.js';
import { readHalf, type JsonHalf } from '../../src/decode/file.js';
import { jsonArrayCandidates } from '../../src/decode/json-array.js';
import { findJsonSplit, type JsonSplit } from '../../src/decode/json-split.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('json-split-');

async function all(candidates: AsyncIterable<Candidate>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const candidate of candidates) out.push(candidate.record);
  return out;
}

const onePass = (file: string) => all(jsonArrayCandidates(() => createReadStream(file)));

const half = (file: string, split: JsonSplit, part: JsonHalf['part']): JsonHalf => ({
  format: 'v2-json',
  path: file,
  split,
  part,
  kind: 'sales-orders',
  businessId: 'DEMO',
});

async function halves(file: string, split: JsonSplit): Promise<[unknown[], unknown[]]> {
  return [
    await all(readHalf(half(file, split, 'first')).open()),
    await all(readHalf(half(file, split, 'second')).open()),
  ];
}

let n = 0;
function written(content: string | Buffer): { file: string; size: number } {
  n += 1;
  const file = path.join(temp.dir, `f-${n}.json`);
  writeFileSync(file, content);
  return { file, size: Buffer.byteLength(content) };
}

// Strings full of what the structure scan must not take for structure: quotes, escapes, brackets, commas.
const tricky = fc.string({
  unit: fc.constantFrom(
    'a',
    'Z',
    '"',
    '\\',
    '[',
    ']',
    '{',
    '}',
    ',',
    ' ',
    '\n',
    'é',
    '😀',
    '\u0001',
  ),
  maxLength: 8,
});
const leaf = fc.oneof(
  tricky,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(tricky, tie('node'), { maxKeys: 3 }),
  ),
})).node;
// Top-level elements: mostly records (objects), some arrays and primitives, which end differently.
const element = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(tricky, value, { maxKeys: 5 }) },
  { weight: 1, arbitrary: fc.array(value, { maxLength: 3 }) },
  { weight: 1, arbitrary: leaf },
);
const space = fc.constantFrom('', '', ' ', '\n', '\r\n  ', '\t');
const document = fc.record({
  bom: fc.boolean(),
  elements: fc.array(fc.record({ element, before: space, after: space }), { maxLength: 30 }),
  indent: fc.constantFrom(undefined, 0, 2),
  end: space,
});

function render(d: typeof document extends fc.Arbitrary<infer T> ? T : never): string {
  const items = d.elements.map(
    ({ element: e, before, after }) => `${before}${JSON.stringify(e, null, d.indent)}${after}`,
  );
  return `${d.bom ? '\uFEFF' : ''}${d.end}[${items.join(',')}]${d.end}`;
}

describe('cutting a v2-JSON file in two', () => {
  it('gives, across both halves, exactly the records of one pass, in order', async () => {
    let cuts = 0;
    await fc.assert(
      fc.asyncProperty(document, async (d) => {
        const { file, size } = written(render(d));
        const expected = await onePass(file);
        const split = await findJsonSplit(file, size);
        if (!split) return;
        cuts += 1;
        // The cut is after an element that ends at or past the middle, at the comma that follows it.
        expect(split.end).toBeGreaterThanOrEqual(Math.floor(size / 2));
        expect(split.comma).toBeGreaterThanOrEqual(split.end);
        const [first, second] = await halves(file, split);
        expect(first.length).toBeGreaterThan(0);
        expect(second.length).toBeGreaterThan(0);
        expect([...first, ...second]).toEqual(expected);
      }),
      { numRuns: 300 },
    );
    // Most generated files have several elements: a property that never cut would prove nothing.
    expect(cuts).toBeGreaterThan(150);
  });

  it('finds no cut where the last record spans the middle, or in an empty or one-record array', async () => {
    const big = { note: 'x'.repeat(1000) };
    for (const content of ['[]', '[{"a":1}]', JSON.stringify([{ a: 1 }, big]), '  [ 1 ]  ']) {
      const { file, size } = written(content);
      expect(await findJsonSplit(file, size)).toBeUndefined();
    }
  });

  it('finds no cut where the structure breaks before the middle (the one pass reports it)', async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ i }));
    const fine = JSON.stringify(records);
    for (const content of [
      `{${fine.slice(1)}`, // not an array
      fine.replace('{"i":3}', '{"i":3}}'), // a stray closing brace early on
      fine.replace(',{"i":4}', ' {"i":4}'), // a missing comma early on
    ]) {
      const { file, size } = written(content);
      expect(await findJsonSplit(file, size)).toBeUndefined();
    }
  });

  it('leaves broken bytes after the cut to the second half, which then fails', async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ i, name: `record ${i}` }));
    const content = JSON.stringify(records).replace('{"i":45,', '{"i":45,,');
    const { file, size } = written(content);
    const split = await findJsonSplit(file, size);
    expect(split).toBeDefined();
    const first = await all(readHalf(half(file, split!, 'first')).open());
    expect(first.length).toBeGreaterThan(20);
    expect(first).toEqual(records.slice(0, first.length));
    await expect(all(readHalf(half(file, split!, 'second')).open())).rejects.toThrow(
      /not valid JSON/,
    );
  });
});
