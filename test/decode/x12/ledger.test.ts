import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimControlNumber, sentTo } from '../../../src/decode/x12/ledger.js';
import { createLocalDrop } from '../../../src/stores/local/index.js';
import { tempFolder } from '../../support/temp.js';

const temp = tempFolder('x12-ledger-');

describe("a partner's X12 ledger in the drop", () => {
  it('gives every concurrent claim its own control number, also from two stores on one drop', async () => {
    const root = path.join(temp.dir, 'drop');
    mkdirSync(root);
    // Two workers of the same drop: two stores, one folder.
    const stores = [createLocalDrop({ path: root }), createLocalDrop({ path: root })];
    const partner = { qualifier: 'ZZ', id: 'ACME' };
    const claims = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        claimControlNumber(stores[i % 2]!, partner, () => ({
          set: '945',
          file: `out-${i}.x12`,
          sentAt: new Date().toISOString(),
          group: '',
        })),
      ),
    );
    const numbers = claims.map((c) => c.control);
    expect(new Set(numbers).size).toBe(24);
    expect((await sentTo(stores[0]!, partner)).map((s) => s.file).sort()).toEqual(
      claims.map((c) => c.file).sort(),
    );
    // A later claim never goes back, even when the hint file is lost.
    const { rmSync } = await import('node:fs');
    rmSync(path.join(root, '.warehouse-ingest/x12/ZZ-ACME/next.json'));
    const next = await claimControlNumber(stores[0]!, partner, () => ({
      set: '997',
      file: 'ack.997',
      sentAt: new Date().toISOString(),
      group: '',
    }));
    expect(numbers).not.toContain(next.control);
    await Promise.all(stores.map((s) => s.close()));
  });
});
