import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { mappedFormatOf } from '../../src/drops/definition-mapped.js';
import { loadPipelineFiles, pipelineSchema } from '../../src/drops/definition.js';
import { tryMappedFile } from '../../src/decode/mapped-try.js';
import { KINDS } from '../../src/records/index.js';
import { tempFolder } from '../support/temp.js';

/** The three worked mappings of docs/formats.md, and the errors of the broken files, in partner terms. */
const FIXTURES = path.resolve('fixtures/mapped');
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });
const temp = tempFolder('mapped-');

function fixture(name: string) {
  const [pipeline] = loadPipelineFiles([path.join(FIXTURES, name, 'pipeline.yaml')]);
  const mapped = mappedFormatOf(pipeline!);
  if (!mapped) throw new Error('no mapping');
  return { pipeline: pipeline!, mapped };
}

async function tryFile(name: string, file: string) {
  const { mapped } = fixture(name);
  return tryMappedFile(path.join(FIXTURES, name, file), {
    kind: KINDS['sales-orders'],
    businessId: 'DEMO',
    mapped,
    onboarding,
    maxJsonBytes: 1024 * 1024,
  });
}

/** A mapping on inline text, for the cases the fixtures do not show. */
async function tryInline(csv: string, mapping: Record<string, unknown>, extra = {}) {
  const pipeline = pipelineSchema.parse({
    name: 'inline',
    businessId: 'DEMO',
    kind: 'sales-orders',
    format: 'csv',
    source: { type: 'local', path: '/unused' },
    mapping,
    ...extra,
  });
  const file = path.join(temp.dir, `in-${Math.random().toString(36).slice(2)}.csv`);
  writeFileSync(file, csv);
  return tryMappedFile(file, {
    kind: KINDS['sales-orders'],
    businessId: 'DEMO',
    mapped: mappedFormatOf(pipeline)!,
    onboarding,
    maxJsonBytes: 1024 * 1024,
  });
}

describe('the worked mappings', () => {
  it('a semicolon CSV in windows-1252 with decimal commas and dd.mm.yyyy dates makes valid orders', async () => {
    const tried = await tryFile('semicolon-csv', 'orders.csv');
    expect(tried.errors).toEqual([]);
    expect(tried.records).toHaveLength(3);
    expect(tried.records[1]).toMatchObject({
      identifiers: { shipmentId: 'WS-10002', businessId: 'DEMO', site: 'UK01' },
      customer: { name: 'Müller; Söhne' },
      dates: { dueOut: '2026-11-25T00:00:00.000Z' },
      shipmentLines: [{ quantities: { ordered: 2 }, financial: { price: 89.9 } }],
      shipAddresses: [{ shipmentId: 'WS-10002', addressId: 'ADDR-1' }],
    });
    expect(tried.records[2]).toMatchObject({
      shipmentLines: [{ quantities: { ordered: 1.5 }, financial: { price: 1234.5 } }],
    });
  });

  it('a nested JSON export makes one order per object found by the records path', async () => {
    const tried = await tryFile('nested-json', 'orders.json');
    expect(tried.errors).toEqual([]);
    expect(tried.records).toHaveLength(2);
    expect(tried.records[0]).toMatchObject({
      identifiers: { shipmentId: 'MP-88120', businessId: 'DEMO' },
      shipAddresses: [{ shipmentId: 'MP-88120', address: { city: 'Leeds' } }],
      shipmentLines: [
        { line: '1', skuId: 'SKU-TEA-100' },
        { line: '2', skuId: 'SKU-MUG-200' },
      ],
      financial: { lineValue: 48.5 },
    });
  });

  it('a header-and-lines CSV grouped by order number makes one order per group', async () => {
    const tried = await tryFile('header-lines-csv', 'orders.csv');
    expect(tried.errors).toEqual([]);
    expect(tried.records).toHaveLength(2);
    expect(tried.records[0]).toMatchObject({
      identifiers: { shipmentId: 'ERP-5001' },
      shipping: { carrier: 'DHL' },
      shipmentLines: [{ line: '1' }, { line: '2' }, { line: '3', skuId: 'SKU-KETTLE-1' }],
    });
  });
});

describe('errors in the partner terms', () => {
  it("an error in shipmentLines[1] of a group names that group's second row, and its column", async () => {
    const tried = await tryFile('header-lines-csv', 'broken.csv');
    expect(tried.errors).toEqual([
      { index: 0, errors: ['line 3, column Sku: shipmentLines[1].skuId: Required'] },
    ]);
  });

  it('an exception inside the expression names the lines of its row', async () => {
    const tried = await tryFile('semicolon-csv', 'broken.csv');
    expect(tried.errors).toEqual([
      {
        index: 1,
        errors: [
          expect.stringMatching(
            /^line 4: the mapping failed: D3030: Unable to cast value to a number: "zwei"/,
          ),
        ],
      },
    ]);
  });

  it('a JSON object names its place in the document and the field', async () => {
    const tried = await tryFile('nested-json', 'broken.json');
    expect(tried.errors).toEqual([
      {
        index: 1,
        errors: [
          expect.stringMatching(/^export\.orders\[1\], field shipBy: dates\.dueOut: /),
          expect.stringMatching(/^export\.orders\[1\], field shipBy: dates\.shipment: /),
          expect.stringMatching(
            /^export\.orders\[1\], field sku: shipmentLines\[0\]\.skuId: Required/,
          ),
        ],
      },
    ]);
  });

  it('an exception in a group names all its lines', async () => {
    const tried = await tryInline('O,Q\nA,1\nA,x\nB,2\n', {
      groupBy: 'O',
      jsonata:
        '{"identifiers": {"shipmentId": $[0].O}, "shipmentLines": $.{"quantities": {"ordered": $number(Q)}}}',
    });
    expect(tried.errors[0]).toEqual({
      index: 0,
      errors: [expect.stringMatching(/^lines 2-3: the mapping failed: D3030/)],
    });
  });

  it('a group that comes back later refuses the file naming both places', async () => {
    await expect(
      tryInline('O,Q\nA,1\nA,2\nB,1\nA,3\n', {
        groupBy: 'O',
        jsonata: '{"identifiers": {"shipmentId": $[0].O}}',
      }),
    ).rejects.toThrow(
      'The rows of group "A" (O) are not together: lines 2-3 and again line 5. Sort the file by O.',
    );
  });

  it("the business id is the pipeline's, whatever the mapping says", async () => {
    const tried = await tryInline('O\nA\n', {
      jsonata: '{"identifiers": {"shipmentId": O, "businessId": "ACME"}}',
    });
    expect(tried.records[0]).toMatchObject({ identifiers: { businessId: 'DEMO' } });
  });
});

describe('safety', () => {
  it('a runaway expression refuses the file, naming the row, within its time limit', async () => {
    await expect(
      tryInline('O\nA\n', {
        jsonata: '( $f := function($n) { $f($n + 1) }; $f(0) )',
        timeoutMs: 50,
      }),
    ).rejects.toThrow(
      /^The mapping ran out of bounds on line 2 and the file is refused: D1012: Evaluation timeout after 50 milliseconds/,
    );
  });

  it('deep recursion refuses the file', async () => {
    await expect(
      tryInline('O\nA\n', {
        jsonata: '( $f := function($n) { $n = 0 ? 0 : 1 + $f($n - 1) }; $f(100000) )',
        maxDepth: 50,
      }),
    ).rejects.toThrow(/ran out of bounds on line 2.*D1011: Stack overflow/);
  });

  it.each([
    ['$eval', '$eval("$lookup($string, \\"constructor\\")")("return process")()'],
    ["a function's constructor", '$lookup($string, "constructor")("return process")()'],
    ['a path to constructor', '$string.constructor("return process")()'],
    ['__proto__', '$lookup($lookup($, "__proto__"), "constructor")'],
    ['process itself', '$process.env()'],
    ['require', '$require("fs")'],
  ])('cannot reach the process through %s', async (_name, expression) => {
    const tried = await tryInline('O\nA\n', {
      jsonata: `{"identifiers": {"shipmentId": $string(${expression})}}`,
    });
    const made = JSON.stringify(tried.records) + JSON.stringify(tried.errors);
    expect(made).not.toContain(process.version);
    expect(made).not.toContain(String(process.env.PATH));
    expect(made).not.toMatch(/"pid"|"env"|\[native code\]/);
    // Either the expression fails (a non-function invoked) or it finds nothing: never a value.
    expect(tried.records.map((r) => (r as { identifiers: object }).identifiers)).not.toContainEqual(
      expect.objectContaining({ shipmentId: expect.anything() }),
    );
  });

  it('a syntax error is refused at load, naming the file and the position', () => {
    const file = path.join(temp.dir, 'broken.yaml');
    writeFileSync(path.join(temp.dir, 'broken.jsonata'), '{ "a": $x.( }');
    writeFileSync(
      file,
      'name: broken\nbusinessId: DEMO\nkind: sales-orders\nformat: csv\nsource: { type: local, path: /unused }\nmapping: { file: broken.jsonata }\n',
    );
    expect(() => loadPipelineFiles([file])).toThrow(
      expect.objectContaining({
        problems: [
          {
            file,
            field: 'mapping.file',
            message: expect.stringMatching(/broken\.jsonata does not compile at position \d+: /),
          },
        ],
      }),
    );
  });
});
