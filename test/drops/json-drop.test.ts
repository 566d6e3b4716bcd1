import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { MAX_LISTED_FAILURES } from '../../src/ingest/validate-batch.js';
import { demoOrdersJson, type DropHarness, startDropHarness } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * v2 JSON files stream like CSV (issue: a 100 MB JSON file ran the worker out of heap; an
 * 80,000-record one was published in one call under one confirm deadline and never completed).
 */
const temp = tempFolder('json-drop-');
let harness: DropHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function dropWith(name: string, content: string) {
  const dir = mkdtempSync(path.join(temp.dir, 'drop-'));
  writeFileSync(path.join(dir, name), content);
  harness = await startDropHarness(
    createLocalDrop({ path: dir }),
    `json-${path
      .basename(dir)
      .slice(5)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`,
    {
      format: 'v2-json',
    },
  );
  const receipt = (folder: string) =>
    JSON.parse(readFileSync(path.join(dir, folder, `${name}.receipt.json`), 'utf8')) as Record<
      string,
      unknown
    >;
  return { harness, receipt };
}

describe('a v2 JSON file in a drop', () => {
  it('is streamed and published in confirmed chunks: every record once, in file order', async () => {
    const count = 2 * PUBLISH_CHUNK + 321;
    const { harness, receipt } = await dropWith('orders.json', demoOrdersJson(count, 'JS'));
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 1 });
    const messages = await harness.topology.messages();
    expect(messages).toHaveLength(count);
    expect(
      messages.map(
        (m) => (m.content as { identifiers: { shipmentId: string } }).identifiers.shipmentId,
      ),
    ).toEqual(Array.from({ length: count }, (_, i) => `JS-${i}`));
    expect(new Set(messages.map((m) => m.properties.messageId)).size).toBe(count);
    expect(receipt('processed')).toMatchObject({
      outcome: 'accepted',
      response: { recordCount: count },
    });
  });

  it('lists at most the first 1000 failing records in the receipt, however many fail', async () => {
    const count = 3 * MAX_LISTED_FAILURES;
    const numbers = `[${Array.from({ length: count }, (_, i) => i).join(',')}]`;
    const { harness, receipt } = await dropWith('numbers.json', numbers);
    expect(await harness.runner.runOnce()).toMatchObject({ rejected: 1 });
    expect(await harness.topology.count()).toBe(0);
    const problem = (receipt('failed') as { response: { detail: string; errors: unknown[] } })
      .response;
    expect(problem.errors).toHaveLength(MAX_LISTED_FAILURES);
    expect(problem.detail).toBe(
      `${count} of ${count} record(s) failed validation; the first ${MAX_LISTED_FAILURES} are listed; no record was accepted.`,
    );
  });

  it('refuses a file cut short with a receipt saying so, and publishes nothing', async () => {
    const text = demoOrdersJson(50, 'CUT');
    const { harness, receipt } = await dropWith('cut.json', text.slice(0, text.length - 200));
    expect(await harness.runner.runOnce()).toMatchObject({ rejected: 1 });
    expect(await harness.topology.count()).toBe(0);
    expect(receipt('failed')).toMatchObject({
      outcome: 'rejected',
      response: {
        status: 400,
        detail: expect.stringMatching(/Record 49 is not valid JSON|Not a complete JSON array/),
      },
    });
  });
});
