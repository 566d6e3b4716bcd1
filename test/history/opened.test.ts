import { afterEach, describe, expect, it } from 'vitest';
import { HistoryUnavailable } from '../../src/operator-errors.js';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { openedOnce } from '../../src/history/opened.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/**
 * `serve` shares one store between its writer and the partner API's reads: a read may come
 * before the first write, and both may open at once.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a store opened once for everything in serve', () => {
  it('lets a read before any write find the tables (PostgreSQL)', async () => {
    const database = await freshDatabase('opened');
    cleanups.push(database.drop);
    const store = openedOnce(createPostgresHistory({ url: database.url }));
    cleanups.push(() => store.close());
    expect(await store.listBatches({ businessId: 'ACME' }, {}, { limit: 5 })).toEqual({
      items: [],
    });
  });

  it('opens the embedded folder once when a read and a write start together', async () => {
    const folder = tempFolder('opened-');
    const store: HistoryStore = openedOnce(
      createEmbeddedHistory({ directory: `${folder.dir}/history` }),
    );
    cleanups.push(() => store.close());
    // Opened twice at once, the embedded store would start two worker threads on one file.
    const [page] = await Promise.all([
      store.listBatches({ operator: true }, {}, { limit: 5 }),
      store.write({ batches: [] }),
      store.open(),
    ]);
    expect(page.items).toEqual([]);
  }, 60_000);

  it('tries a failed opening again on the next call', async () => {
    const store = openedOnce(
      createPostgresHistory({ url: 'postgres://postgres@127.0.0.1:1/nowhere' }),
    );
    cleanups.push(() => store.close());
    await expect(store.listBatches({ operator: true }, {}, { limit: 1 })).rejects.toBeInstanceOf(
      HistoryUnavailable,
    );
    await expect(store.open()).rejects.toBeInstanceOf(HistoryUnavailable);
  });
});
