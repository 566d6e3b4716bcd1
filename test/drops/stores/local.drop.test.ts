import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { InputState } from '../../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../../src/stores/local/index.js';
import type { Receipt } from '../../../src/drops/receipts.js';
import { demoOrdersCsv, startDropHarness, type DropHarness } from '../../support/drop-harness.js';
import { tempFolder } from '../../support/temp.js';
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
    await expect(runner.runOnce()).resolves.toMatchObject({
      accepted: 0,
      retried: 0,
      unusableNames: 1,
    });
    expect(existsSync(path.join(dir.dir, 'bad\nname.csv'))).toBe(true);
  });
});

describe('local drop: open files', () => {
  it('leaves no file open after rejected files (the id and lineage lists of a failed try are closed)', async () => {
    const { readdirSync } = await import('node:fs');
    const { createDropRunner } = await import('../../../src/drops/runner.js');
    const { pipelineSchema } = await import('../../../src/drops/definition.js');
    const { createLogger } = await import('../../../src/log.js');
    const { createIngest } = await import('../../../src/ingest/flow.js');
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

/**
 * A refused permission is neither an outage nor the input's fault: it must end, not loop. Root
 * reads and writes through file modes, so the refusal comes from the immutable flag (`chattr +i`:
 * EPERM on link, rename and unlink even for root), on the machine's real file system.
 */
describe('local drop: a refused permission ends in a bounded outcome', () => {
  const chattr = (flag: '+i' | '-i', file: string) => execFileSync('chattr', [flag, file]);
  let harness: DropHarness;
  let dir: string;
  const immutable: string[] = [];

  beforeAll(async () => {
    dir = tempFolder('local-denied-').dir;
    harness = await startDropHarness(createLocalDrop({ path: dir }), 'local-denied', {
      retry: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 2 },
    });
  });
  afterAll(async () => {
    for (const file of immutable) chattr('-i', file);
    await harness?.close();
  });

  it('a file the worker may not claim is parked after retry.maxAttempts failures, reported once, and taken again once it changes', async () => {
    const file = path.join(dir, 'denied.csv');
    writeFileSync(file, demoOrdersCsv(`DENIED-${Date.now()}`, 3));
    chattr('+i', file);
    immutable.push(file);
    let retried = 0;
    await vi.waitFor(
      async () => {
        const summary = await harness.runner.runOnce();
        retried += summary.retried;
        expect(summary.parked).toBe(1);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(retried).toBe(2); // retry.maxAttempts, then no more
    expect(await harness.runner.runOnce()).toMatchObject({ parked: 1, retried: 0, accepted: 0 });
    const parked = harness.warnings.filter((line) => line.includes('file parked'));
    expect(parked).toHaveLength(1);
    expect(parked[0]).toContain('denied.csv');
    expect(parked[0]).toMatch(/refused/);

    chattr('-i', file);
    immutable.splice(immutable.indexOf(file), 1);
    utimesSync(file, new Date(), new Date(Date.now() + 1000)); // it changed: tried again
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 1, parked: 0 });
    expect(existsSync(path.join(dir, 'processed', 'denied.csv.receipt.json'))).toBe(true);
  });

  it('a write refused during a try uses an attempt each time and ends dead, with a receipt', async () => {
    const content = demoOrdersCsv(`DENIED-IDS-${Date.now()}`, 3);
    const sha256 = createHash('sha256').update(content).digest('hex');
    // The id list of these bytes cannot be replaced: the try fails after publishing, each time.
    const ids = path.join(dir, '.warehouse-ingest', 'state', `${sha256}.ids`);
    mkdirSync(path.dirname(ids), { recursive: true });
    writeFileSync(ids, '');
    chattr('+i', ids);
    immutable.push(ids);
    writeFileSync(path.join(dir, 'denied-ids.csv'), content);
    await vi.waitFor(
      async () => {
        await harness.runner.runOnce();
        expect(existsSync(path.join(dir, 'failed', 'denied-ids.csv.receipt.json'))).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'failed', 'denied-ids.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    expect(receipt).toMatchObject({ outcome: 'dead', attempt: 2 });
    expect(JSON.stringify(receipt.response)).toMatch(/refused/);
    const state = JSON.parse(
      readFileSync(path.join(dir, '.warehouse-ingest', 'state', `${sha256}.json`), 'utf8'),
    ) as InputState;
    expect(state).toMatchObject({ status: 'dead', attempts: 2 });
    expect(state.failures?.map((f) => f.kind)).toEqual(['error', 'error']);
    expect(existsSync(path.join(dir, 'failed', 'denied-ids.csv'))).toBe(true);
  });
});
