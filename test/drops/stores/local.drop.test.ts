import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLocalDrop } from '../../../src/drops/stores/local.js';
import { tempFolder } from '../../support/temp.js';
import { describe, expect, it } from 'vitest';
import { describeDropPipeline } from './drop-contract.js';
import { localFixture } from '../../support/local-fixture.js';

describeDropPipeline('local folder', localFixture('local-pipeline-'), { atomicRename: true });

describe('local drop: hostile names', () => {
  it('refuses and logs a file whose name has control characters instead of failing the whole drop', async () => {
    const dir = tempFolder('hostile-');
    writeFileSync(path.join(dir.dir, 'bad\nname.csv'), 'x');
    const store = createLocalDrop({ path: dir.dir });
    const names = (await store.list()).map((e) => e.name);
    expect(names).toContain('bad\nname.csv');
    const { createDropRunner } = await import('../../../src/drops/runner.js');
    const { pipelineSchema } = await import('../../../src/drops/definition.js');
    const { createLogger } = await import('../../../src/log.js');
    const pipeline = pipelineSchema.parse({
      name: 'hostile',
      businessId: 'ACME',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: dir.dir },
      readiness: { strategy: 'rename' },
    });
    const ingest = async () => {
      throw new Error('must not be reached');
    };
    const runner = createDropRunner({
      pipeline,
      store,
      ingest,
      onboarding: {},
      log: createLogger({ level: 'silent' }),
      spoolDirectory: path.join(dir.dir, '.spool'),
    });
    await expect(runner.runOnce()).resolves.toMatchObject({ accepted: 0, retried: 1 });
    expect(existsSync(path.join(dir.dir, 'bad\nname.csv'))).toBe(true);
  });
});

describe('local drop: open files', () => {
  it('leaves no file open after rejected files (the id and lineage lists of a failed try are closed)', async () => {
    const { readdirSync } = await import('node:fs');
    const { createDropRunner } = await import('../../../src/drops/runner.js');
    const { pipelineSchema } = await import('../../../src/drops/definition.js');
    const { createLogger } = await import('../../../src/log.js');
    const { createIngest } = await import('../../../src/pipeline/ingest.js');
    const { createNonePublisher } = await import('../../../src/publish/index.js');
    const dir = tempFolder('fd-');
    const pipeline = pipelineSchema.parse({
      name: 'fd',
      businessId: 'ACME',
      kind: 'sales-orders',
      format: 'v2-json',
      source: { type: 'local', path: dir.dir },
      readiness: { strategy: 'rename' },
    });
    const ingest = createIngest({ publisher: createNonePublisher(), routingKeyFor: () => 'x' });
    const runner = createDropRunner({
      pipeline,
      store: createLocalDrop({ path: dir.dir }),
      ingest,
      onboarding: {},
      log: createLogger({ level: 'silent' }),
      spoolDirectory: path.join(dir.dir, '..', `${path.basename(dir.dir)}-spool`),
    });
    const openFiles = () => readdirSync('/proc/self/fd').length;
    writeFileSync(path.join(dir.dir, 'warm-up.json'), '[{"not":"an order"}]');
    await runner.runOnce();
    const before = openFiles();
    for (let i = 0; i < 20; i++)
      writeFileSync(path.join(dir.dir, `bad-${i}.json`), `[{"not":"an order ${i}"}]`);
    expect(await runner.runOnce()).toMatchObject({ rejected: 20 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // a destroyed stream closes its descriptor on the next tick
    expect(openFiles()).toBeLessThanOrEqual(before + 2);
  });
});
