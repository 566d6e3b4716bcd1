/**
 * The golden fixtures pin the contract: every valid record passes unchanged (minus platform
 * fields), and every invalid fixture yields exactly the `errors` the API must answer.
 * New files in `fixtures/<kind>/invalid/` are picked up without touching this test.
 */
import { describe, expect, it } from 'vitest';
import { KIND_NAMES, KINDS, validateRecord } from '../../src/records/index.js';
import { BUSINESS_ID, batchErrors, invalidFixtures, validRecords } from './fixtures.js';

/** The input with the kind's platform fields removed: what a valid record must come out as. */
function withoutPlatformFields(record: unknown, paths: ReadonlyArray<readonly string[]>): unknown {
  const copy = structuredClone(record) as Record<string, unknown>;
  for (const path of paths) {
    let parent: Record<string, unknown> | undefined = copy;
    for (const key of path.slice(0, -1))
      parent = parent?.[key] as Record<string, unknown> | undefined;
    if (parent) delete parent[path[path.length - 1]!];
  }
  return copy;
}

describe.each(KIND_NAMES)('%s fixtures', (name) => {
  const kind = KINDS[name];

  describe('valid.json', () => {
    const records = validRecords(name);

    it('holds 3 records for business ACME', () => {
      expect(records).toHaveLength(3);
    });

    it.each(records.map((record, index) => [index, record] as const))(
      'record %i passes',
      (_index, record) => {
        const before = structuredClone(record);
        const result = validateRecord(kind, record, BUSINESS_ID);
        expect(result).toEqual({
          ok: true,
          record: withoutPlatformFields(record, kind.platformFields),
        });
        // Unlisted fields pass through, nothing is coerced, and the caller's input is left untouched.
        expect(record).toEqual(before);
      },
    );
  });

  describe.each(invalidFixtures(name))('invalid/$file', (fixture) => {
    it('is a well-formed fixture', () => {
      expect(fixture.description).toEqual(expect.any(String));
      expect(fixture.batch.length).toBeGreaterThan(0);
      expect(fixture.errors.length).toBeGreaterThan(0);
    });

    it('produces exactly its errors', () => {
      expect(batchErrors(kind, fixture.batch)).toEqual(fixture.errors);
    });
  });
});
