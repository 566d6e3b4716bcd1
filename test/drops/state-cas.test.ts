import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DropUnavailable } from '../../src/errors.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import {
  readState,
  StaleState,
  STATE_FOLDER,
  STATE_LOCK_STALE_MS,
  writeState,
} from '../../src/drops/state/persist.js';
import { localFixture } from '../support/local-fixture.js';
import { tapStore } from '../support/store-tap.js';
import { s3Fixture } from '../support/s3-fixture.js';
import { sftpFixture } from '../support/sftp-fixture.js';
import type { StoreFixture } from '../stores/store-contract.js';

/**
 * State writes are a compare-and-set on the state's version, on every store: a writer holding an
 * older state than the drop's is refused (`StaleState`), so a worker that lost a file can never
 * put its state backwards. Local folders and SFTP hold a lock for the compare and the write, so
 * of two writers from one version exactly one wins; S3 reads the version just before the write.
 */
let n = 0;
const fresh = (): InputState => ({
  sha256: `${String(++n).padStart(4, '0')}${'a'.repeat(60)}`,
  status: 'publishing',
  file: 'orders.csv',
  attempts: 1,
});

function describeCas(name: string, make: () => Promise<StoreFixture>, atomic: boolean) {
  describe(`state compare-and-set: ${name}`, () => {
    let f: StoreFixture;
    beforeAll(async () => {
      f = await make();
    });
    afterAll(async () => {
      await f.store.close();
      await f.cleanup();
    });

    it('raises the version on every write and refuses a write from an older one', async () => {
      const first = await writeState(f.store, fresh());
      expect(first.version).toBe(1);
      const second = await writeState(f.store, { ...first, attempts: 2 });
      expect(second.version).toBe(2);
      // A worker still holding the first state (it lost the file meanwhile) must not write it back.
      const refused = await writeState(f.store, { ...first, status: 'received' }).catch(
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(StaleState);
      expect(await readState(f.store, first.sha256)).toMatchObject({ version: 2, attempts: 2 });
      // Nor may a writer that believes there is no state yet create one over it.
      const { version: _none, ...unversioned } = second;
      await expect(writeState(f.store, unversioned)).rejects.toBeInstanceOf(StaleState);
      expect((await f.store.list(STATE_FOLDER)).map((e) => e.name)).not.toContain(
        `${STATE_FOLDER}/${first.sha256}.lock`,
      );
    });

    it('continues a state written before versions existed (no version: 0)', async () => {
      const legacy = fresh();
      await f.put(`${STATE_FOLDER}/${legacy.sha256}.json`, JSON.stringify(legacy));
      const next = await writeState(f.store, (await readState(f.store, legacy.sha256))!);
      expect(next.version).toBe(1);
    });

    if (atomic) {
      // Three rounds of twelve: on SFTP a busy lock changing hands between two looks at it was
      // once taken for an error (about 1 write in 20 at this contention) instead of a lost race.
      it.each([1, 2, 3])(
        'lets exactly one of several writers from the same version win (round %i)',
        async () => {
          const base = await writeState(f.store, fresh());
          const outcomes = await Promise.allSettled(
            Array.from({ length: 12 }, (_, i) =>
              writeState(f.store, { ...base, attempts: 10 + i }),
            ),
          );
          const won = outcomes.filter((o) => o.status === 'fulfilled');
          expect(won).toHaveLength(1);
          for (const lost of outcomes.filter((o) => o.status === 'rejected'))
            expect(
              (lost as PromiseRejectedResult).reason,
              String((lost as PromiseRejectedResult).reason),
            ).toBeInstanceOf(StaleState);
          const stored = await readState(f.store, base.sha256);
          expect(stored).toMatchObject({
            version: 2,
            attempts: (won[0] as PromiseFulfilledResult<InputState>).value.attempts,
          });
        },
      );

      it('breaks the lock a crashed writer left behind once it is stale', async () => {
        const base = await writeState(f.store, fresh());
        const lock = `${STATE_FOLDER}/${base.sha256}.lock`;
        await f.put(
          lock,
          JSON.stringify({ token: 'crashed', at: Date.now() - STATE_LOCK_STALE_MS - 1000 }),
        );
        expect((await writeState(f.store, base)).version).toBe(2);
        expect(await f.has(lock)).toBe(false);
      });

      it('removes its own lock an outage kept it from removing at the next write, instead of waiting for it to go stale', async () => {
        const base = await writeState(f.store, fresh());
        const lock = `${STATE_FOLDER}/${base.sha256}.lock`;
        // The store goes away between taking the lock and writing the state: the write and the
        // lock's removal both fail, as they do when a server stops mid-try.
        const tap = tapStore(f.store);
        let down = false;
        tap.before(async (operation, name) => {
          if (operation === 'write' && name.endsWith(`${base.sha256}.json`)) down = true;
          if (down) throw new DropUnavailable('the store is down (test)');
        });
        await expect(writeState(tap.store, base)).rejects.toBeInstanceOf(DropUnavailable);
        expect(await f.has(lock), 'the lock is left behind').toBe(true);

        down = false;
        tap.before(undefined);
        const started = Date.now();
        expect((await writeState(tap.store, base)).version).toBe(2);
        // Waiting for the lock to go stale would take STATE_LOCK_STALE_MS.
        expect(Date.now() - started).toBeLessThan(STATE_LOCK_STALE_MS / 2);
        expect(await f.has(lock)).toBe(false);
      });
    }
  });
}

describeCas('local', localFixture('state-cas-'), true);
describeCas('sftp', sftpFixture, true);
describeCas('s3', s3Fixture, false);
