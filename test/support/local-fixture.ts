import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLocalDrop } from '../../src/stores/local/index.js';
import type { StoreFixture } from '../stores/store-contract.js';
import { tempFolder } from './temp.js';

/** A drop in a fresh temporary folder: the store under test, and the folder to put files in behind its back. */
export function localFixture(prefix: string): () => Promise<StoreFixture> {
  const temp = tempFolder(prefix);
  return async () => ({
    store: createLocalDrop({ path: temp.dir }),
    async put(name, content) {
      mkdirSync(path.dirname(path.join(temp.dir, name)), { recursive: true });
      writeFileSync(path.join(temp.dir, name), content);
    },
    async has(name) {
      return existsSync(path.join(temp.dir, name));
    },
    async setModified(name, ms) {
      utimesSync(path.join(temp.dir, name), ms / 1000, ms / 1000);
    },
    async cleanup() {},
  });
}
