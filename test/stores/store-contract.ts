import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DropStore } from '../../src/stores/store.js';
import { UnsafeName } from '../../src/operator-errors.js';

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

/** A drop under test: a fresh store, plus a way to put files in behind its back (as a partner would). */
export interface StoreFixture {
  store: DropStore;
  /** Writes a file into the drop directly, not through the store. */
  put(name: string, content: string | Buffer): Promise<void>;
  /** Whether a file is in the drop, looked at directly. */
  has(name: string): Promise<boolean>;
  /** Sets a file's modification time, as `cp -p` or `rsync -t` do; absent where a store cannot (S3). */
  setModified?(name: string, ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * The behaviour every DropStore promises, run by each implementation's test file with its own
 * fixture factory (local folder, real OpenSSH SFTP server, real S3-protocol server).
 */
export function describeDropStore(name: string, makeFixture: () => Promise<StoreFixture>): void {
  describe(`DropStore contract: ${name}`, () => {
    let f: StoreFixture;
    beforeAll(async () => {
      f = await makeFixture();
    });
    afterAll(async () => {
      await f.store.close();
      await f.cleanup();
    });

    it('lists top-level files with size and modification time, not subfolders', async () => {
      await f.put('list/a.csv', 'abc');
      await f.put('list/sub/b.csv', 'x');
      const entries = await f.store.list('list');
      expect(entries.map((e) => e.name)).toEqual(['list/a.csv']);
      expect(entries[0]!.size).toBe(3);
      expect(Math.abs(entries[0]!.modifiedMs - Date.now())).toBeLessThan(120_000);
      expect(await f.store.list('list/missing')).toEqual([]);
    });

    it('stats a file, and says undefined for a missing one', async () => {
      await f.put('stat/x.json', '[1]');
      expect(await f.store.stat('stat/x.json')).toMatchObject({ name: 'stat/x.json', size: 3 });
      expect(await f.store.stat('stat/nope.json')).toBeUndefined();
    });

    it('streams bytes exactly, also for a large binary file', async () => {
      const big = randomBytes(3 * 1024 * 1024 + 17);
      await f.put('read/big.bin', big);
      const read = await readAll(await f.store.read('read/big.bin'));
      expect(read.length).toBe(big.length);
      expect(createHash('sha256').update(read).digest('hex')).toBe(
        createHash('sha256').update(big).digest('hex'),
      );
    });

    it('keeps unicode and spaces in names', async () => {
      await f.put('names/Bestellung März 1.csv', 'ü');
      expect((await f.store.list('names')).map((e) => e.name)).toEqual([
        'names/Bestellung März 1.csv',
      ]);
      expect((await readAll(await f.store.read('names/Bestellung März 1.csv'))).toString()).toBe(
        'ü',
      );
    });

    it('writes whole files, creating folders, replacing an earlier version', async () => {
      await f.store.write('write/deep/r.receipt.json', '{"a":1}');
      await f.store.write('write/deep/r.receipt.json', '{"a":2}');
      expect((await readAll(await f.store.read('write/deep/r.receipt.json'))).toString()).toBe(
        '{"a":2}',
      );
      expect((await f.store.list('write/deep')).map((e) => e.name)).toEqual([
        'write/deep/r.receipt.json',
      ]);
    });

    it('renames into a new folder, and refuses when the source is gone or the target exists', async () => {
      await f.put('mv/a.csv', 'A');
      await f.put('mv/b.csv', 'B');
      expect(await f.store.rename('mv/a.csv', 'mv/processed/a.csv')).toBe(true);
      expect(await f.has('mv/a.csv')).toBe(false);
      expect((await readAll(await f.store.read('mv/processed/a.csv'))).toString()).toBe('A');
      expect(await f.store.rename('mv/a.csv', 'mv/processed/a2.csv')).toBe(false);
      await f.put('mv/processed/b.csv', 'old');
      expect(await f.store.rename('mv/b.csv', 'mv/processed/b.csv')).toBe(false);
      expect((await readAll(await f.store.read('mv/processed/b.csv'))).toString()).toBe('old');
      expect(await f.has('mv/b.csv')).toBe(true);
    });

    it('lets exactly one of two racing renames win when renames are atomic', async () => {
      if (!f.store.atomicRename) return; // S3 has no rename: claims use a lease there (tested with the runner)
      await f.put('race/x.csv', 'X');
      const results = await Promise.all([
        f.store.rename('race/x.csv', 'race/claimed/1-x.csv'),
        f.store.rename('race/x.csv', 'race/claimed/2-x.csv'),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
      // The same for a move to a name nobody else makes (claims): a plain atomic rename.
      await f.put('race/y.csv', 'Y');
      const fresh = await Promise.all([
        f.store.rename('race/y.csv', 'race/claimed/1-y.csv', { fresh: true }),
        f.store.rename('race/y.csv', 'race/claimed/2-y.csv', { fresh: true }),
      ]);
      expect(fresh.filter(Boolean)).toHaveLength(1);
      expect(await f.has('race/y.csv')).toBe(false);
      expect(await f.store.rename('race/y.csv', 'race/claimed/3-y.csv', { fresh: true })).toBe(
        false,
      );
    });

    it('removes files, also ones already gone', async () => {
      await f.put('rm/a.csv', 'A');
      await f.store.remove('rm/a.csv');
      expect(await f.has('rm/a.csv')).toBe(false);
      await expect(f.store.remove('rm/a.csv')).resolves.toBeUndefined();
    });

    it.each([['../escape.csv'], ['/etc/passwd'], ['a/../../b'], ['a\\b'], ['bad\nname']])(
      'refuses the unsafe name %j everywhere',
      async (bad) => {
        await expect(f.store.read(bad)).rejects.toThrow(UnsafeName);
        await expect(f.store.write(bad, 'x')).rejects.toThrow(UnsafeName);
        await expect(f.store.rename('ok.csv', bad)).rejects.toThrow(UnsafeName);
        await expect(f.store.remove(bad)).rejects.toThrow(UnsafeName);
      },
    );
  });
}
