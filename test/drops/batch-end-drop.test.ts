import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BatchEnd, BatchEnds, ConfirmedRecords } from '../../src/ingest/batch-end.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { demoOrdersJson, type DropHarness, startDropHarness } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * A dropped file's batch ends once, when a try settles it, through the ingest flow's one end of
 * every batch (drops/try/ended.ts): the flow tells its records, the drop its end with the receipt.
 */
const temp = tempFolder('batch-end-drop-');
let harness: DropHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('a dropped file ends through the one end of every batch', () => {
  it('once per settled file: accepted with its records under its id, rejected, a duplicate', async () => {
    const ended: BatchEnd[] = [];
    const confirmed: Array<{ batchId: string; records: ConfirmedRecords }> = [];
    const ends: BatchEnds = {
      confirmed: (batchId, _businessId, records) => void confirmed.push({ batchId, records }),
      ended: (end) => void ended.push(end),
    };
    const dir = mkdtempSync(path.join(temp.dir, 'drop-'));
    const orders = demoOrdersJson(3, 'END');
    writeFileSync(path.join(dir, 'a-orders.json'), orders);
    writeFileSync(path.join(dir, 'b-broken.json'), '[{"identifiers":{}}]');
    harness = await startDropHarness(
      createLocalDrop({ path: dir }),
      `batch-end-${process.pid}`,
      { format: 'v2-json' },
      { ends },
    );
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 1, rejected: 1 });
    // The same bytes again, under another name: a duplicate, a batch of its own.
    writeFileSync(path.join(dir, 'c-again.json'), orders);
    expect(await harness.runner.runOnce()).toMatchObject({ duplicates: 1 });

    expect(ended.map((end) => [end.source.file, end.outcome, end.recordCount])).toEqual([
      ['a-orders.json', 'accepted', 3],
      ['b-broken.json', 'rejected', 0],
      ['c-again.json', 'duplicate', 0],
    ]);
    const [accepted, rejected] = ended;
    expect(accepted!.receipt).toMatchObject({ outcome: 'accepted' });
    expect(accepted!.correlationId).toBe(accepted!.batchId);
    expect(rejected!.problem).toMatchObject({ status: 400 });
    // The accepted file's records, told as the broker confirmed them, under its batch id.
    expect(confirmed.map(({ batchId }) => batchId)).toEqual([accepted!.batchId]);
    expect(confirmed[0]!.records.references).toEqual(['END-0', 'END-1', 'END-2']);
    await harness.topology.messages();
  });
});
