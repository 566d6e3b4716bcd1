/**
 * The two-core validation pass (src/ingest/halves.ts) on its own: what it leaves behind when a
 * stop cuts it short, that it never takes more worker threads than the machine has cores, and
 * that a worker out of heap only sends the file to one pass.
 * (What it publishes is compared with one pass in test/drops/halves-drop.test.ts.)
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { decodeFile } from '../../src/decode/file.js';
import { Interrupted } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { StreamBatch } from '../../src/ingest/batch.js';
import { validateInHalves, WORKER_LIMITS } from '../../src/ingest/halves.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { KINDS } from '../../src/records/index.js';
import { conversionContext } from '../../src/records/legacy/index.js';
import { demoOrdersCsv } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('halves-');
const routingKeyFor = compileRoutingKey('{kind}.{businessId}');
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });

let n = 0;
/** A streamed batch of a CSV file of `orders` DEMO orders, offered in halves, its spool in a folder of its own. */
async function splitBatch(orders: number, signal?: AbortSignal) {
  n += 1;
  const folder = path.join(temp.dir, `b${n}`);
  mkdirSync(folder);
  const file = path.join(folder, 'orders.csv');
  writeFileSync(file, demoOrdersCsv(`HV-${n}`, orders));
  const kind = KINDS['sales-orders'];
  const records = await decodeFile(file, {
    kind,
    format: 'v1-csv',
    businessId: 'DEMO',
    context: conversionContext(onboarding, 'DEMO', 'sales-orders', new Date().toISOString()),
    maxJsonBytes: 1 << 20,
    halvesFromBytes: 1,
  });
  if (records.mode !== 'stream' || !records.halves) throw new Error('expected halves');
  const batch: StreamBatch = {
    ...records,
    kind,
    businessId: 'DEMO',
    correlationId: `c-${n}`,
    source: { type: 'local', name: 'halves' },
    log: createLogger({ level: 'silent' }),
    spoolFile: path.join(folder, 'work', 'messages.spool'),
    ...(signal && { signal }),
  };
  const work = path.join(folder, 'work');
  const left = () => (existsSync(work) ? readdirSync(work) : []);
  return { batch, halves: records.halves, left };
}

describe('validateInHalves', () => {
  it('throws Interrupted on a stop, ends its worker threads and leaves no spool behind', async () => {
    const stop = new AbortController();
    const { batch, halves, left } = await splitBatch(20_000, stop.signal);
    const run = validateInHalves(batch, halves, routingKeyFor);
    // Once the threads have begun to spool: there is something to remove.
    await expect.poll(left, { timeout: 20_000, interval: 20 }).not.toEqual([]);
    stop.abort();
    await expect(run).rejects.toBeInstanceOf(Interrupted);
    expect(left()).toEqual([]);
    // The workers' places are free again: the next file is split.
    const next = await splitBatch(2_000);
    const decided = await validateInHalves(next.batch, next.halves, routingKeyFor);
    expect(decided).toMatchObject({ decided: true, total: 2_000 });
    if (decided.decided) await decided.prepared.spool.remove();
    expect(next.left()).toEqual([]);
  });

  it(`takes at most ${availableParallelism()} worker threads at once, two a file (one core each): a file beyond is read in one pass`, async () => {
    const files = Math.floor(availableParallelism() / 2) + 1;
    const batches = await Promise.all(Array.from({ length: files }, () => splitBatch(4_000)));
    const outcomes = await Promise.all(
      batches.map(({ batch, halves }) => validateInHalves(batch, halves, routingKeyFor)),
    );
    expect(outcomes.filter((o) => o.decided)).toHaveLength(files - 1);
    expect(outcomes.filter((o) => !o.decided)).toEqual([
      { decided: false, reason: 'no cores free' },
    ]);
    for (const outcome of outcomes) if (outcome.decided) await outcome.prepared.spool.remove();
    for (const { left } of batches) expect(left()).toEqual([]);
  });

  it('gives no verdict when a worker runs out of its heap, and leaves no spool behind', async () => {
    const { batch, halves, left } = await splitBatch(4_000);
    // A heap no worker can even load its modules in: the thread dies, the caller reads the file in
    // one pass. (4 MiB, not less: below that Node 24 cannot even deserialize the thread's start-up
    // snapshot, which aborts the whole process — a limit no configuration of ours comes near.)
    const starved = await validateInHalves(batch, halves, routingKeyFor, {
      ...WORKER_LIMITS,
      maxOldGenerationSizeMb: 4,
    });
    expect(starved).toMatchObject({ decided: false });
    if (!starved.decided) expect(starved.reason).toMatch(/memory limit/);
    expect(left()).toEqual([]);
    // The capped heap itself is ample for a half.
    const again = await splitBatch(4_000);
    const decided = await validateInHalves(again.batch, again.halves, routingKeyFor);
    expect(decided).toMatchObject({ decided: true, total: 4_000 });
    if (decided.decided) await decided.prepared.spool.remove();
  });
});
