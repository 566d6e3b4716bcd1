import { describe, expect, it } from 'vitest';
import { shortenedName, unusableName } from '../../src/drops/unusable-names.js';

const worker = { workerId: 'host-12345', claims: true };

describe('file names the worker cannot use', () => {
  it('a line break, a backslash or `..` cannot be addressed at all: reported, not moved', () => {
    for (const name of ['bad\nname.csv', 'back\\slash.csv', '..'])
      expect(unusableName(name, worker), JSON.stringify(name)).toMatchObject({ movable: false });
  });

  it('a name with no room for the claim and receipt names is moved, where names are file names', () => {
    expect(unusableName(`${'a'.repeat(213)}.csv`, worker)).toBeUndefined();
    expect(unusableName(`${'a'.repeat(214)}.csv`, worker)).toMatchObject({
      movable: true,
      reason: expect.stringMatching(/218 bytes long; at most 217/),
    });
    expect(unusableName(`${'a'.repeat(251)}.csv`, { ...worker, claims: false })).toBeUndefined();
    // Multi-byte characters count as bytes: 80 × 'é' (2 bytes) + '.csv' is 164 bytes, fine; 120 are not.
    expect(unusableName(`${'é'.repeat(80)}.csv`, worker)).toBeUndefined();
    expect(unusableName(`${'é'.repeat(120)}.csv`, worker)).toMatchObject({ movable: true });
  });

  it('shortens to a safe name: the start, a hash of the whole name, the extension', () => {
    const short = shortenedName(`${'注'.repeat(90)}.csv`);
    expect(Buffer.byteLength(short)).toBeLessThanOrEqual(120);
    expect(short).toMatch(/^注+~[0-9a-f]{12}\.csv$/);
    expect(shortenedName(`${'a'.repeat(250)}1.csv`)).not.toBe(
      shortenedName(`${'a'.repeat(250)}2.csv`),
    );
    expect(unusableName(shortenedName(`${'a'.repeat(251)}.csv`), worker)).toBeUndefined();
  });
});
