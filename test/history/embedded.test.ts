import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HistoryUnavailable } from '../../src/errors.js';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { runCli } from '../support/cli-process.js';
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

describe('lineage on an embedded history', () => {
  it('says the history is held by the running process, and searches the journal and drops instead', async () => {
    const dataDirectory = path.join(temp.dir, 'served');
    const held = createEmbeddedHistory({ directory: path.join(dataDirectory, 'history') });
    await held.open();
    try {
      const result = await runCli(['lineage', 'SO-HELD'], {
        env: {
          INGEST_ENV: 'development',
          INGEST_DATA_DIRECTORY: dataDirectory,
          INGEST_HISTORY__ENABLED: 'true',
          INGEST_PIPELINES_DIRECTORY: path.join(temp.dir, 'no-pipelines'),
        },
      });
      expect(result.stderr).toContain(
        `the history could not be searched: the embedded history ${path.join(dataDirectory, 'history')} is held by process ${process.pid}`,
      );
      // Nothing found while the history could not be searched: exit 2, as for a drop.
      expect(result.code).toBe(2);
    } finally {
      await held.close();
    }
  }, 60_000);
});
