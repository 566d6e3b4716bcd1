import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, parseJson } from '../../src/decode/json.js';
import { isIngestError } from '../../src/errors.js';

/** Nesting depth of a parsed value: arrays and objects count, scalars do not. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

const refusedForDepth = (text: string): boolean => {
  try {
    parseJson(Buffer.from(text));
    return false;
  } catch (error) {
    if (isIngestError(error) && /deeper than/.test(error.message)) return true;
    throw error;
  }
};

/** A value `levels` deep, its strings full of brackets, quotes and backslashes that must not count. */
function nested(levels: number, inner: unknown): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++)
    value = i % 2 ? { '[{"\\': value, '}]': '\\"[' } : ['"\\"{[', value, '\\'];
  return value;
}

describe('parseJson: the nesting bound', () => {
  it(`takes ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}, whatever the strings hold`, () => {
    expect(refusedForDepth(JSON.stringify(nested(MAX_JSON_DEPTH, '[[[[')))).toBe(false);
    expect(refusedForDepth(JSON.stringify(nested(MAX_JSON_DEPTH + 1, '\\\\"')))).toBe(true);
  });

  it('agrees with the depth of the parsed value for any JSON text', () => {
    const text = fc
      .tuple(
        fc.integer({ min: 0, max: MAX_JSON_DEPTH + 3 }),
        fc.jsonValue({ maxDepth: 3 }),
        fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é') }),
      )
      .map(([levels, inner, tricky]) => JSON.stringify(nested(levels, [inner, tricky])));
    fc.assert(
      fc.property(text, (json) => {
        expect(refusedForDepth(json)).toBe(depthOf(JSON.parse(json)) > MAX_JSON_DEPTH);
      }),
      { numRuns: 500 },
    );
  });
});
