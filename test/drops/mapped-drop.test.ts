import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { salesOrderSchema } from '../../src/records/index.js';
import { type DropHarness, demoOrdersCsv, startDropHarness } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * The three worked mappings of docs/formats.md end to end: the fixture's file dropped in a local
 * drop, its pipeline's own keys (format, csv or json, mapping), the DEMO onboarding profile, a
 * real RabbitMQ — valid v2 sales orders on the broker and the receipt beside the input; the
 * fixture's broken file refused whole, in the partner's terms.
 */
const FIXTURES = path.resolve('fixtures/mapped');
const temp = tempFolder('mapped-drop-');
let harness: DropHarness | undefined;
const harnesses: DropHarness[] = [];
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

/** The fixture pipeline's format keys, its mapping file made absolute (the harness has no pipeline file). */
function formatKeys(fixture: string): Record<string, unknown> {
  const yaml = parseYaml(
    readFileSync(path.join(FIXTURES, fixture, 'pipeline.yaml'), 'utf8'),
  ) as Record<string, unknown> & { mapping: { file: string } };
  const { format, csv, json, mapping } = yaml;
  return {
    format,
    ...(csv !== undefined && { csv }),
    ...(json !== undefined && { json }),
    mapping: { ...mapping, file: path.join(FIXTURES, fixture, mapping.file) },
  };
}

async function drop(fixture: string, file: string) {
  const dir = mkdtempSync(path.join(temp.dir, 'drop-'));
  copyFileSync(path.join(FIXTURES, fixture, file), path.join(dir, file));
  harness = await startDropHarness(
    createLocalDrop({ path: dir }),
    `mapped-${path
      .basename(dir)
      .slice(5)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`,
    formatKeys(fixture),
  );
  const receipt = (folder: string) =>
    JSON.parse(readFileSync(path.join(dir, folder, `${file}.receipt.json`), 'utf8')) as Record<
      string,
      unknown
    >;
  return { harness, receipt };
}

describe.each([
  ['semicolon-csv', 'orders.csv', ['WS-10001', 'WS-10002', 'WS-10003']],
  ['nested-json', 'orders.json', ['MP-88120', 'MP-88121']],
  ['header-lines-csv', 'orders.csv', ['ERP-5001', 'ERP-5002']],
])('the worked mapping %s', (fixture, file, shipmentIds) => {
  it('puts valid v2 sales orders on the broker, with the receipt beside the input', async () => {
    const { harness, receipt } = await drop(fixture, file);
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 1 });
    const messages = await harness.topology.messages();
    const records = messages.map((m) => m.content as { identifiers: { shipmentId: string } });
    expect(records.map((r) => r.identifiers.shipmentId)).toEqual(shipmentIds);
    for (const record of records) expect(salesOrderSchema.safeParse(record).success).toBe(true);
    expect(records[0]).toMatchObject({ identifiers: { businessId: 'DEMO', site: 'UK01' } });
    expect(receipt('processed')).toMatchObject({
      outcome: 'accepted',
      format: formatKeys(fixture).format,
      response: { recordCount: shipmentIds.length },
    });
  });
});

describe('a broken file of a worked mapping', () => {
  it.each([
    [
      'semicolon-csv',
      'broken.csv',
      [
        {
          index: 1,
          errors: [expect.stringMatching(/^line 4: the mapping failed: D3030: .*"zwei"/)],
        },
      ],
    ],
    [
      'header-lines-csv',
      'broken.csv',
      [{ index: 0, errors: ['line 3, column Sku: shipmentLines[1].skuId: Required'] }],
    ],
    [
      'nested-json',
      'broken.json',
      [
        {
          index: 1,
          errors: expect.arrayContaining([
            expect.stringMatching(/^export\.orders\[1\], field shipBy: dates\.dueOut: /),
          ]),
        },
      ],
    ],
  ])(
    '%s is refused whole, in the partner terms, nothing published',
    async (fixture, file, errors) => {
      const { harness, receipt } = await drop(fixture, file);
      expect(await harness.runner.runOnce()).toMatchObject({ rejected: 1 });
      expect(await harness.topology.count()).toBe(0);
      expect(receipt('failed')).toMatchObject({
        outcome: 'rejected',
        response: { status: 400, errors },
      });
    },
  );

  it('a runaway mapping fails its file with a receipt saying so', async () => {
    const dir = mkdtempSync(path.join(temp.dir, 'drop-'));
    copyFileSync(
      path.join(FIXTURES, 'header-lines-csv', 'orders.csv'),
      path.join(dir, 'orders.csv'),
    );
    harness = await startDropHarness(
      createLocalDrop({ path: dir }),
      `mapped-runaway-${path
        .basename(dir)
        .slice(-6)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, 'x')}`,
      {
        format: 'csv',
        mapping: {
          groupBy: 'OrderNo',
          timeoutMs: 50,
          jsonata: '( $f := function($n) { $f($n + 1) }; $f(0) )',
        },
      },
    );
    expect(await harness.runner.runOnce()).toMatchObject({ rejected: 1 });
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'failed', 'orders.csv.receipt.json'), 'utf8'),
    );
    expect(receipt).toMatchObject({
      outcome: 'rejected',
      response: {
        status: 400,
        detail: expect.stringMatching(
          /^The mapping ran out of bounds on lines 2-4 and the file is refused: D1012/,
        ),
      },
    });
  });
});

/** The v1 sales-order CSV read as a partner's own layout (the bench's mapping, bench/csv.mjs). */
const V1_LAYOUT_MAPPING = `(
  $o := $[0];
  {
    "identifiers": { "shipmentId": $o.OrdNumber },
    "order": { "customerRef": $o.OrdNumber },
    "dates": { "dueOut": $o.DueOutDate & "T00:00:00Z", "shipment": $o.DueOutDate & "T00:00:00Z" },
    "financial": { "lineValue": $sum($.($number(oOrderLines_Qty) * $number(oOrderLines_SalesUnitPrice))) },
    "shipmentLines": [$.{
      "line": oOrderLines_LineNumber,
      "skuId": oOrderLines_ProductID,
      "product": { "unitOfMeasure": oOrderLines_UoM },
      "quantities": { "ordered": $number(oOrderLines_Qty), "required": $number(oOrderLines_Qty) },
      "financial": { "price": $number(oOrderLines_SalesUnitPrice) }
    }]
  }
)`;

describe('a large mapped CSV validated in two halves', () => {
  async function dropMapped(content: string, halvesFromBytes: number) {
    const dir = mkdtempSync(path.join(temp.dir, 'halves-'));
    writeFileSync(path.join(dir, 'orders.csv'), content);
    const h = await startDropHarness(
      createLocalDrop({ path: dir }),
      `mapped-halves-${path
        .basename(dir)
        .slice(-6)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, 'x')}`,
      { format: 'csv', mapping: { groupBy: 'OrdNumber', jsonata: V1_LAYOUT_MAPPING } },
      { halvesFromBytes, logLevel: 'debug' },
    );
    harnesses.push(h);
    const summary = await h.runner.runOnce();
    const messages = (await h.topology.messages()).map((m) => ({
      id: m.properties.messageId,
      body: m.content,
    }));
    const inHalves = h.warnings.some((line) => line.includes('"validatedInHalves":true'));
    const folder = summary.accepted === 1 ? 'processed' : 'failed';
    const receipt = JSON.parse(
      readFileSync(path.join(dir, folder, 'orders.csv.receipt.json'), 'utf8'),
    ) as { response: Record<string, unknown> };
    return { summary, messages, inHalves, receipt };
  }

  it('publishes exactly what one pass publishes', async () => {
    const content = demoOrdersCsv(`MH-${process.pid}`, 250);
    const onePass = await dropMapped(content, Number.POSITIVE_INFINITY);
    const halves = await dropMapped(content, 1);
    expect(onePass.summary).toMatchObject({ accepted: 1 });
    expect(halves.summary).toMatchObject({ accepted: 1 });
    expect([onePass.inHalves, halves.inHalves]).toEqual([false, true]);
    expect(halves.messages).toHaveLength(250);
    expect(halves.messages).toEqual(onePass.messages);
  });

  it('refuses a bad row in the second half with the one-pass receipt', async () => {
    const lines = demoOrdersCsv(`MB-${process.pid}`, 250).split('\n');
    lines[400] = (lines[400] ?? '').replace(',1,EA,', ',one,EA,'); // order 199's second row, line 401
    const onePass = await dropMapped(lines.join('\n'), Number.POSITIVE_INFINITY);
    const halves = await dropMapped(lines.join('\n'), 1);
    expect(halves.summary).toMatchObject({ rejected: 1 });
    expect(halves.messages).toEqual([]);
    expect(halves.receipt.response.errors).toEqual(onePass.receipt.response.errors);
    expect(JSON.stringify(halves.receipt.response.errors)).toContain(
      'lines 400-401: the mapping failed',
    );
  });
});
