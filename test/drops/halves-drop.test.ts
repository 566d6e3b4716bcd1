import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalDrop } from '../../src/stores/local/index.js';
import {
  demoOrdersCsv,
  demoOrdersJson,
  startDropHarness,
  type DropHarness,
} from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * A large CSV or v2-JSON file's validation pass runs in two halves at once, each in a worker thread
 * (src/ingest/halves.ts). Whatever the file, the outcome must be the one pass's: the same
 * messages (bodies, ids, routing keys, order), the same lineage, and for a bad file the same
 * failure receipt. Each file goes through two drops: one that validates it in one pass
 * (`halvesFromBytes` infinite) and one that splits every file (`halvesFromBytes` 1).
 */
const temp = tempFolder('halves-drop-');
const harnesses: DropHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

interface Outcome {
  readonly summary: Record<string, unknown>;
  readonly receipt: { outcome: string; response: Record<string, unknown> };
  readonly messages: Array<{ id: unknown; routingKey: string; body: unknown }>;
  readonly lineage: string[];
  readonly log: string[];
  /** What is left in the try's spool folder after the file settled. */
  readonly leftInSpool: string[];
}

let n = 0;
async function dropOnce(
  content: string,
  halvesFromBytes: number,
  name = 'orders.csv',
): Promise<Outcome> {
  n += 1;
  const dir = path.join(temp.dir, `drop-${n}`);
  mkdirSync(dir);
  const harness = await startDropHarness(
    createLocalDrop({ path: dir }),
    `halves-${process.pid}-${n}`,
    name.endsWith('.json') ? { format: 'v2-json' } : {},
    {
      halvesFromBytes,
      logLevel: 'debug',
    },
  );
  harnesses.push(harness);
  writeFileSync(path.join(dir, name), content);
  const summary = (await harness.runner.runOnce()) as unknown as Record<string, unknown>;
  const folder = summary.accepted === 1 ? 'processed' : 'failed';
  const receipt = JSON.parse(
    readFileSync(path.join(dir, folder, `${name}.receipt.json`), 'utf8'),
  ) as Outcome['receipt'];
  const messages = (await harness.topology.messages()).map((m) => ({
    id: m.properties.messageId,
    routingKey: m.routingKey,
    body: m.content,
  }));
  const state = path.join(dir, '.warehouse-ingest', 'state');
  const lineageFile = readdirSync(state).find((name) => name.endsWith('.lineage'));
  // Past its header (which names the pipeline): `index TAB line TAB reference TAB messageId` a record.
  const lineage = lineageFile
    ? readFileSync(path.join(state, lineageFile), 'utf8').trim().split('\n').slice(1)
    : [];
  const leftInSpool = readdirSync(harness.spoolDirectory, { recursive: true }).map(String);
  return { summary, receipt, messages, lineage, log: harness.warnings, leftInSpool };
}

/** The file in one pass and in halves. */
async function bothWays(content: string, name?: string) {
  const onePass = await dropOnce(content, Number.POSITIVE_INFINITY, name);
  const inHalves = await dropOnce(content, 1, name);
  return { onePass, inHalves };
}

const split = (log: string[]) => log.some((line) => line.includes('"validatedInHalves":true'));
const fellBack = (log: string[]) =>
  log.find((line) => line.includes('validating the input in one pass'));

/** Both drops accepted the file, the halves' with exactly the one pass's messages, ids and lineage. */
function expectAcceptedAlike(
  { onePass, inHalves }: { onePass: Outcome; inHalves: Outcome },
  records: number,
) {
  expect(onePass.summary).toMatchObject({ accepted: 1 });
  expect(inHalves.summary).toMatchObject({ accepted: 1 });
  expect(split(inHalves.log)).toBe(true);
  expect(split(onePass.log)).toBe(false);
  expect(inHalves.messages).toHaveLength(records);
  expect(inHalves.messages).toEqual(onePass.messages);
  expect(inHalves.receipt.response.recordCount).toBe(records);
  expect(inHalves.receipt.response.messageIds).toEqual(onePass.receipt.response.messageIds);
  expect(inHalves.lineage.length).toBeGreaterThan(1);
  expect(inHalves.lineage).toEqual(onePass.lineage);
  // Neither half's spool outlives the try.
  expect(inHalves.leftInSpool.filter((name) => name.includes('spool'))).toEqual([]);
}

/** Both drops refused the file with the same receipt (but for the try's own correlation id), publishing nothing. */
function expectRefusedAlike({ onePass, inHalves }: { onePass: Outcome; inHalves: Outcome }) {
  expect(inHalves.summary).toMatchObject({ rejected: 1 });
  expect(inHalves.messages).toEqual([]);
  expect(inHalves.receipt.response).toEqual({
    ...onePass.receipt.response,
    correlationId: inHalves.receipt.response.correlationId,
  });
}

describe('a CSV drop validated in two halves', () => {
  it('publishes exactly what one pass publishes: bodies, ids, routing keys, order, lineage', async () => {
    expectAcceptedAlike(await bothWays(demoOrdersCsv(`H-${process.pid}`, 1500)), 1500);
  });

  it('refuses a file with a bad record in its second half with the one-pass receipt, publishing nothing', async () => {
    const lines = demoOrdersCsv(`B-${process.pid}`, 1000).split('\n');
    // Line 1801 (the second row of order 899) is in the second half: a quantity that is not a number.
    lines[1800] = lines[1800]!.replace(',1,EA,', ',one,EA,');
    const { onePass, inHalves } = await bothWays(lines.join('\n'));
    expectRefusedAlike({ onePass, inHalves });
    expect(inHalves.receipt.response.detail).toMatch(/^1 of 1000 record\(s\) failed validation/);
    expect(JSON.stringify(inHalves.receipt.response.errors)).toContain('line 1801');
    expect(fellBack(inHalves.log)).toContain('the second half is not valid');
  });

  it('reports an order whose rows are in both halves as one pass does', async () => {
    const lines = demoOrdersCsv(`C-${process.pid}`, 1000).split('\n');
    // The last order's rows take the first order's number: it reappears far from its first rows.
    lines[1999] = lines[1999]!.replace(/-999,/, '-0,');
    lines[2000] = lines[2000]!.replace(/-999,/, '-0,');
    const { onePass, inHalves } = await bothWays(lines.join('\n'));
    expectRefusedAlike({ onePass, inHalves });
    expect(JSON.stringify(inHalves.receipt.response.errors)).toContain(
      'already appeared at lines 2-3; the rows of one order must be contiguous',
    );
    expect(fellBack(inHalves.log)).toContain('an order has rows in both halves');
  });

  it('refuses broken quoting in the second half with the one-pass receipt', async () => {
    const lines = demoOrdersCsv(`Q-${process.pid}`, 1000).split('\n');
    lines[1500] = lines[1500]!.replace('SKU-', 'SK"U-');
    const { onePass, inHalves } = await bothWays(lines.join('\n'));
    expectRefusedAlike({ onePass, inHalves });
    expect(inHalves.receipt.response.detail).toMatch(/^Broken quoting on line 1501/);
  });
});

describe('a v2-JSON drop validated in two halves', () => {
  it('publishes exactly what one pass publishes, a record repeated across the cut included', async () => {
    const lines = demoOrdersJson(600, `J-${process.pid}`).split('\n');
    // Record 10 again as the last record (in the second half): it is published twice, the second
    // copy under its occurrence-numbered id, as one pass numbers it.
    lines[600] = `${lines[600]},\n${lines[11]!.replace(/,$/, '')}`;
    const both = await bothWays(lines.join('\n'), 'orders.json');
    expectAcceptedAlike(both, 601);
    expect(new Set(both.inHalves.messages.map((m) => m.id)).size).toBe(601);
    expect(both.inHalves.lineage).toHaveLength(601);
  });

  it('refuses a bad record in the second half with the one-pass receipt, publishing nothing', async () => {
    const lines = demoOrdersJson(600, `JB-${process.pid}`).split('\n');
    // Record 500 (line 502 of the file) is in the second half: its businessId is not a string.
    lines[501] = lines[501]!.replace('"businessId":"DEMO"', '"businessId":7');
    const { onePass, inHalves } = await bothWays(lines.join('\n'), 'orders.json');
    expectRefusedAlike({ onePass, inHalves });
    expect(JSON.stringify(inHalves.receipt.response.errors)).toContain('"index":500');
    expect(fellBack(inHalves.log)).toContain('the second half is not valid');
  });

  it('refuses broken JSON in the second half with the one-pass receipt', async () => {
    const lines = demoOrdersJson(600, `JQ-${process.pid}`).split('\n');
    lines[451] = lines[451]!.replace(/,$/, ',,');
    const { onePass, inHalves } = await bothWays(lines.join('\n'), 'orders.json');
    expectRefusedAlike({ onePass, inHalves });
    expect(inHalves.receipt.response.detail).toMatch(/expected a record/);
    expect(fellBack(inHalves.log)).toMatch(/expected a record/);
  });
});
