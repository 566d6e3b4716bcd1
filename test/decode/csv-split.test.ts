/**
 * Cutting a CSV file in two (src/decode/csv-split.ts): each half decoded on its own must give
 * exactly the records of one pass — same values, errors and row lines — whenever no order has
 * rows in both halves, and when one has, the halves' order tables must say so.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCsv, type CsvRecord } from '../../src/decode/csv.js';
import { findCsvSplit } from '../../src/decode/csv-split.js';
import { OrderRanges } from '../../src/decode/order-ranges.js';
import { LEGACY } from '../../src/records/legacy/index.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('csv-split-');

/** The sales-order layout of spec §4.3, as the decoder of a drop uses it. */
const SALES = LEGACY['sales-orders']!.csv;
const COLUMNS = [
  ...SALES.header.map((f) => f.name),
  ...SALES.lines!.fields.map((f) => `${SALES.lines!.name}_${f.name}`),
];

/** A cell as CSV writes it: quoted when it holds a comma, a quote, a line break or white space at an end. */
const cell = (value: string) =>
  /[",\r\n]|^\s|\s$/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

const text = fc.string({
  unit: fc.constantFrom('a', 'B', '7', ',', '"', '\n', '\r\n', '\r', ' ', 'é'),
  maxLength: 6,
});
const row = fc.record({
  account: text,
  order: fc.constantFrom('', 'SO-1', 'SO-2', 'SO-3', 'SO-4', 'SO-5', 'SO-6'),
  product: text,
  qty: fc.constantFrom('1', '2.5', 'x', ''),
  end: fc.constantFrom('\n', '\r\n', '\r'),
  blankAfter: fc.constantFrom('', '', '', '\n', '  \n', '""\n'),
});
const file = fc.record({
  bom: fc.boolean(),
  headerEnd: fc.constantFrom('\n', '\r\n', '\r'),
  rows: fc.array(row, { minLength: 2, maxLength: 40 }),
  finalEnd: fc.boolean(),
});

type FileShape = typeof file extends fc.Arbitrary<infer T> ? T : never;

function render(f: FileShape): Buffer {
  let out = (f.bom ? '\uFEFF' : '') + COLUMNS.join(',') + f.headerEnd;
  f.rows.forEach((r, i) => {
    // In the layout's column order: free text where a cell is text, the generated number or not.
    const values: Record<string, string> = {
      AccountID: r.account,
      OrdNumber: r.order,
      oOrderLines_ProductID: r.product,
      oOrderLines_Qty: r.qty,
    };
    const line = COLUMNS.map((name) =>
      cell(values[name] ?? (name.endsWith('Date') ? '2026-02-03' : '1')),
    ).join(',');
    const last = i === f.rows.length - 1;
    out += line + (last && !f.finalEnd ? '' : r.end + (last ? '' : r.blankAfter));
  });
  return Buffer.from(out);
}

async function* bytes(...parts: Buffer[]): AsyncGenerator<Uint8Array> {
  // Small chunks, so that line ends and characters are also cut between chunks.
  for (const part of parts)
    for (let at = 0; at < part.length; at += 7) yield part.subarray(at, at + 7);
}

async function decodeAll(
  input: AsyncIterable<Uint8Array>,
  options: Parameters<typeof decodeCsv>[2] = {},
): Promise<CsvRecord[]> {
  const records: CsvRecord[] = [];
  for await (const record of decodeCsv(input, SALES, options))
    records.push(structuredClone(record));
  return records;
}

let n = 0;
function written(content: Buffer): string {
  n += 1;
  const file = path.join(temp.dir, `f${n}.csv`);
  writeFileSync(file, content);
  return file;
}

describe('findCsvSplit', () => {
  it('cuts where the two halves, decoded apart, give the records of one pass (or say an order is in both)', async () => {
    let cut = 0;
    let joined = 0;
    await fc.assert(
      fc.asyncProperty(file, async (f) => {
        const content = render(f);
        const onePass = await decodeAll(bytes(content));
        const file = written(content);
        const split = await findCsvSplit(file, content.length, 'OrdNumber');
        if (!split) return;
        cut += 1;
        expect(split.at).toBeGreaterThan(split.headerEnd - 1);
        expect(split.at).toBeLessThan(content.length);
        const firstOrders = new OrderRanges(1000);
        const secondOrders = new OrderRanges(1000);
        const first = await decodeAll(bytes(content.subarray(0, split.at)), {
          orders: firstOrders,
        });
        const second = await decodeAll(
          bytes(content.subarray(0, split.headerEnd), content.subarray(split.at)),
          { orders: secondOrders, lineAfterHeader: split.line },
        );
        const inBoth = (key: string) =>
          onePass.some((r) => r.value.OrdNumber === key && r.rows[0]! < split.line) &&
          onePass.some((r) => r.value.OrdNumber === key && r.rows[0]! >= split.line);
        const shared = ['SO-1', 'SO-2', 'SO-3', 'SO-4', 'SO-5', 'SO-6'].some(inBoth);
        expect(firstOrders.sharesKeyWith(secondOrders.words)).toBe(shared);
        if (shared) {
          joined += 1;
          return;
        }
        expect([...first, ...second]).toEqual(onePass);
      }),
      { numRuns: 300 },
    );
    // Not vacuous: most files were cut, and both kinds of outcome were seen.
    expect(cut).toBeGreaterThan(150);
    expect(joined).toBeGreaterThan(10);
    expect(cut - joined).toBeGreaterThan(50);
  });

  it('cuts a file of unique orders near its middle, at the first row of an order', async () => {
    const rows = ['AccountID,OrdNumber,oOrderLines_ProductID,oOrderLines_Qty'];
    for (let i = 0; i < 1000; i++) rows.push(`A,SO-${i},P1,1`, `A,SO-${i},P2,2`);
    const content = Buffer.from(`${rows.join('\n')}\n`);
    const split = await findCsvSplit(written(content), content.length, 'OrdNumber');
    expect(split).toBeDefined();
    const { at, line, headerEnd } = split!;
    expect(headerEnd).toBe(rows[0]!.length + 1);
    expect(Math.abs(at - content.length / 2)).toBeLessThan(100);
    const rest = content.subarray(at).toString();
    expect(rest.startsWith(rows[line - 1]!)).toBe(true);
    // An order's first row: the row before belongs to another order.
    expect(rows[line - 2]!.split(',')[1]).not.toBe(rows[line - 1]!.split(',')[1]);
  });

  it('finds no cut when the header lacks the group column, or one order runs past the rows looked at', async () => {
    const noGroup = Buffer.from(`AccountID,Other\n${'A,1\n'.repeat(1000)}`);
    expect(await findCsvSplit(written(noGroup), noGroup.length, 'OrdNumber')).toBeUndefined();
    // 10,000 rows: more than are looked at past the middle.
    const oneOrder = Buffer.from(`AccountID,OrdNumber\n${'A,SO-1\n'.repeat(10_000)}`);
    expect(await findCsvSplit(written(oneOrder), oneOrder.length, 'OrdNumber')).toBeUndefined();
    // Without a group column every row is a record: any row start will do.
    const products = Buffer.from(`ProductID\n${'P\n'.repeat(1000)}`);
    const split = await findCsvSplit(written(products), products.length, undefined);
    expect(split).toMatchObject({ headerEnd: 10 });
    expect(
      readFileSync(path.join(temp.dir, `f${n}.csv`))
        .subarray(split!.at - 2, split!.at)
        .toString(),
    ).toBe('P\n');
  });
});
