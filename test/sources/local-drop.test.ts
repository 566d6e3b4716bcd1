import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLocalDrop } from '../../src/sources/local.js';
import { tempFolder } from '../support/temp.js';
import { describeDropPipeline } from './drop-contract.js';

const temp = tempFolder('local-pipeline-');

describeDropPipeline('local folder', async () => ({
  store: createLocalDrop({ path: temp.dir }),
  async put(name, content) {
    mkdirSync(path.dirname(path.join(temp.dir, name)), { recursive: true });
    writeFileSync(path.join(temp.dir, name), content);
  },
  async has(name) {
    return existsSync(path.join(temp.dir, name));
  },
  async cleanup() {},
}), { atomicRename: true });
