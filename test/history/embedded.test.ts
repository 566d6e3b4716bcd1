import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HistoryUnavailable } from '../../src/errors.js';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { tempFolder } from '../support/temp.js';
import { describeHistoryStore } from './store-contract.js';

const temp = tempFolder('history-embedded-');

describeHistoryStore('embedded (PGlite)', async () => {
  const directory = path.join(temp.dir, 'contract');
  return {
    store: () => createEmbeddedHistory({ directory }),
    cleanup: async () => undefined,
  };
});

describe('embedded history: one process per folder', () => {
  it('refuses a second instance while the first holds the folder, and opens once it is closed', async () => {
    const directory = path.join(temp.dir, 'held');
    const first = createEmbeddedHistory({ directory });
    await first.open();
    const second = createEmbeddedHistory({ directory });
    await expect(second.open()).rejects.toThrow(HistoryUnavailable);
    await expect(second.open()).rejects.toThrow(/held by process \d+/);
    await first.close();
    await second.open();
    expect(await second.endpointStates({ operator: true })).toEqual([]);
    await second.close();
  });

  it('answers HistoryUnavailable before it is open', async () => {
    const store = createEmbeddedHistory({ directory: path.join(temp.dir, 'never') });
    await expect(store.write({ batches: [] })).rejects.toThrow(HistoryUnavailable);
  });
});
