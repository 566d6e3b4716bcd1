/** CSV versions of the legacy shapes (spec §4.3): rows in, legacy records out, streamed. */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { csvLocation, decodeCsv, type CsvLayout, type CsvRecord } from '../../src/decode/csv.js';
import { parseNumber } from '../../src/decode/csv-number.js';
import { MalformedBody } from '../../src/errors.js';

const SALES: CsvLayout = {
  header: [
    { name: 'AccountID', type: 'string' },
    { name: 'OrdNumber', type: 'string' },
    { name: 'DueOutDate', type: 'date' },
  ],
  lines: {
    name: 'oOrderLines',
    fields: [
      { name: 'LineNumber', type: 'number' },
      { name: 'ProductID', type: 'string' },
      { name: 'Qty', type: 'number' },
      { name: 'UoM', type: 'string' },
      { name: 'SalesUnitPrice', type: 'number' },
    ],
  },
  groupBy: 'OrdNumber',
};

const WORK: CsvLayout = {
  header: [
    { name: 'AccountID', type: 'string' },
    { name: 'OrdNumber', type: 'string' },
    { name: 'CreatedDate', type: 'date' },
  ],
  lines: {
    name: 'FinishedGoods',
    fields: [
      { name: 'LineNumber', type: 'number' },
      { name: 'ProductID', type: 'string' },
      { name: 'Qty', type: 'number' },
      { name: 'ExpDelDate', type: 'date' },
    ],
    parts: {
      name: 'FGParts',
      fields: [
        { name: 'ProductID', type: 'string' },
        { name: 'Qty', type: 'number' },
      ],
      groupBy: 'LineNumber',
    },
  },
  groupBy: 'OrdNumber',
};

const MASTER: CsvLayout = {
  header: ['ProductID', 'AccountID', 'ShortDesc', 'LongDesc', 'UoM'].map((name) => ({
    name,
    type: 'string' as const,
  })),
};

const SALES_HEADER =
  'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice';
const SALES_COLUMNS = SALES_HEADER.split(',').join(', ');
const EXAMPLE = `${SALES_HEADER}
ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99
ACME,SO-1,2026-02-03,2,SKU-2,1,EA,4.50
ACME,SO-2,2026-02-04,1,SKU-9,5,BOX,12
`;
const EXAMPLE_RECORDS: CsvRecord[] = [
  {
    value: {
      AccountID: 'ACME',
      OrdNumber: 'SO-1',
      DueOutDate: '2026-02-03',
      oOrderLines: [
        { LineNumber: 1, ProductID: 'SKU-1', Qty: 2, UoM: 'EA', SalesUnitPrice: 9.99 },
        { LineNumber: 2, ProductID: 'SKU-2', Qty: 1, UoM: 'EA', SalesUnitPrice: 4.5 },
      ],
    },
    errors: [],
    rows: [2, 3],
  },
  {
    value: {
      AccountID: 'ACME',
      OrdNumber: 'SO-2',
      DueOutDate: '2026-02-04',
      oOrderLines: [{ LineNumber: 1, ProductID: 'SKU-9', Qty: 5, UoM: 'BOX', SalesUnitPrice: 12 }],
    },
    errors: [],
    rows: [4],
  },
];

async function* chunks(...parts: Array<string | Uint8Array>): AsyncGenerator<string | Uint8Array> {
  yield* parts;
}

/** `data` as bytes cut every `size` bytes (cuts land inside quotes, CRLFs and UTF-8 characters). */
function sliced(data: string | Uint8Array, size: number): Uint8Array[] {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

async function decode(
  input: string | Array<string | Uint8Array>,
  layout: CsvLayout = SALES,
): Promise<CsvRecord[]> {
  const out: CsvRecord[] = [];
  for await (const record of decodeCsv(
    chunks(...(typeof input === 'string' ? [input] : input)),
    layout,
  ))
    out.push(record);
  return out;
}

/** The MalformedBody a decode throws; fails the test if it throws anything else or nothing. */
async function malformed(
  input: string | Array<string | Uint8Array>,
  layout: CsvLayout = SALES,
): Promise<string> {
  const error = await decode(input, layout).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MalformedBody);
  const { message } = error as MalformedBody;
  expect(message).not.toMatch(/CsvError|CSV_|\n\s+at /); // a sentence, never csv-parse's codes or a stack
  return message;
}

async function drain(records: AsyncIterable<CsvRecord>): Promise<number> {
  let count = 0;
  for await (const _ of records) count++;
  return count;
}

const sales = (rows: string): string => `${SALES_HEADER}\n${rows}`;
const errorsOf = (records: CsvRecord[]) => records.map((r) => r.errors);

describe('decodeCsv: the sales-order example', () => {
  it('decodes the spec example into two legacy orders with their row lines', async () => {
    expect(await decode(EXAMPLE)).toEqual(EXAMPLE_RECORDS);
  });

  it('gives the same records whatever the chunking, down to one byte at a time, and from text chunks', async () => {
    expect(await decode(sliced(EXAMPLE, 1))).toEqual(EXAMPLE_RECORDS);
    expect(await decode(sliced(EXAMPLE, 7))).toEqual(EXAMPLE_RECORDS);
    expect(await decode(EXAMPLE.match(/[\s\S]{1,5}/g)!)).toEqual(EXAMPLE_RECORDS);
  });

  it('keeps a UTF-8 character that is cut between two chunks', async () => {
    const text = sales('ACME,SO-1,2026-02-03,1,Café ☕ 𝄞,2,EA,1\n');
    for (const size of [1, 2, 3]) {
      const [record] = await decode(sliced(text, size));
      expect((record!.value.oOrderLines as Array<Record<string, unknown>>)[0]!.ProductID).toBe(
        'Café ☕ 𝄞',
      );
    }
  });

  it('reads a BOM and CRLF line ends', async () => {
    const crlf = `\uFEFF${EXAMPLE.replaceAll('\n', '\r\n')}`;
    expect(await decode(crlf)).toEqual(EXAMPLE_RECORDS);
    expect(await decode(sliced(crlf, 1))).toEqual(EXAMPLE_RECORDS); // BOM and CRLF cut across chunks
  });

  it('reads mixed LF, CRLF and CR line ends', async () => {
    const mixed = `${SALES_HEADER}\r\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\nACME,SO-1,2026-02-03,2,SKU-2,1,EA,4.50\rACME,SO-2,2026-02-04,1,SKU-9,5,BOX,12`;
    expect(await decode(mixed)).toEqual(EXAMPLE_RECORDS);
  });

  it('reads a file with or without a final line end', async () => {
    expect(await decode(EXAMPLE.trimEnd())).toEqual(EXAMPLE_RECORDS);
    expect(await decode(`${EXAMPLE.trimEnd()}\r\n`)).toEqual(EXAMPLE_RECORDS);
  });

  it('skips blank lines (also before the header and blank-looking ones) and still counts them as lines', async () => {
    const text = `\n${SALES_HEADER}\n\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n   \n\r\nACME,SO-2,2026-02-04,1,SKU-9,5,BOX,12\n\n\n`;
    const records = await decode(text);
    expect(records.map((r) => r.rows)).toEqual([[4], [7]]);
    expect(errorsOf(records)).toEqual([[], []]);
  });
});

describe('decodeCsv: quoting and line numbers', () => {
  it('reads quoted values with commas, doubled quotes and line breaks', async () => {
    const text = sales(
      'ACME,SO-1,2026-02-03,1,"SKU, ""big""",2,EA,1\nACME,SO-1,2026-02-03,2,"two\nlines",1,EA,1\nACME,SO-1,2026-02-03,3,"crlf\r\ntoo",1,EA,1\n',
    );
    const [record] = await decode(text);
    const lines = record!.value.oOrderLines as Array<Record<string, unknown>>;
    expect(lines.map((l) => l.ProductID)).toEqual(['SKU, "big"', 'two\nlines', 'crlf\r\ntoo']);
    expect(record!.rows).toEqual([2, 3, 5]);
  });

  it('moves later rows down after a quoted line break (LF, CRLF or CR), in any chunking', async () => {
    const text =
      `${SALES_HEADER}\r\n` +
      'ACME,SO-1,2026-02-03,1,"a\r\nb\r\nc",2,EA,1\r\n' + // lines 2-4
      'ACME,SO-2,2026-02-03,1,"d\ne",2,EA,1\r\n' + // lines 5-6
      'ACME,SO-3,2026-02-03,1,"f\rg",2,EA,1\r\n' + // lines 7-8
      '\r\n' + // line 9
      'ACME,SO-4,2026-02-03,1,SKU,x,EA,1\r\n'; // line 10
    for (const input of [[text], sliced(text, 1), sliced(text, 5)]) {
      const records = await decode(input);
      expect(records.map((r) => r.rows)).toEqual([[2], [5], [7], [10]]);
      const last = records[3]!;
      expect(last.errors).toEqual([
        { path: 'oOrderLines[0].Qty', message: 'Expected a number, received "x"' },
      ]);
      expect(csvLocation(last, 'oOrderLines[0].Qty', SALES)).toBe(
        'line 10, column oOrderLines_Qty',
      );
    }
  });

  it('names the line and column of a quoted value that is never closed', async () => {
    const text = sales(
      'ACME,SO-1,2026-02-03,1,"a\nb",2,EA,1\nACME,SO-2,2026-02-03,1,"open,2,EA,1\nACME,SO-3,2026-02-03,1,SKU,2,EA,1\n',
    );
    const expected =
      'Broken quoting on line 4, column oOrderLines_ProductID: a quoted value is never closed (the quote runs to the end of the file)';
    expect(await malformed(text)).toBe(expected);
    expect(await malformed(sliced(text, 3))).toBe(expected);
  });

  it('names the line of a closing quote followed by other text', async () => {
    expect(
      await malformed(
        sales('ACME,SO-1,2026-02-03,1,SKU,2,EA,1\nACME,SO-1,2026-02-03,2,"SKU"x,2,EA,1\n'),
      ),
    ).toBe(
      'Broken quoting on line 3, column oOrderLines_ProductID: a closing quote must be followed by a comma or the end of the line; write a quote inside a quoted value as two quotes ("")',
    );
  });

  it('names the line of a quote inside an unquoted value', async () => {
    expect(await malformed(sales('ACME,SO-1,2026-02-03,1,12" pipe,2,EA,1\n'))).toBe(
      'Broken quoting on line 2, column oOrderLines_ProductID: a quote inside an unquoted value; put the whole value in quotes and write each quote inside it as two quotes ("")',
    );
  });

  it('refuses a row longer than 1 MiB characters (a quote left open in a large file) without reading on', async () => {
    const long = 'x'.repeat(64 * 1024);
    let fed = 0;
    async function* input() {
      yield sales('ACME,SO-1,2026-02-03,1,"open');
      for (; fed < 64; fed++) yield long; // 4 MiB in all
    }
    const error = await drain(decodeCsv(input(), SALES)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedBody);
    expect((error as Error).message).toBe(
      'The row starting on line 2 is longer than 1048576 characters; is a quote left open?',
    );
    expect(fed).toBeLessThan(20);
  });
});

describe('decodeCsv: the header row', () => {
  it('accepts names with spaces around them and columns in any order', async () => {
    const header =
      ' oOrderLines_SalesUnitPrice , AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM ';
    const [record] = await decode(`${header}\n9.99,ACME,SO-1,2026-02-03,1,SKU-1,2,EA\n`);
    expect(record!.value).toEqual({
      AccountID: 'ACME',
      OrdNumber: 'SO-1',
      DueOutDate: '2026-02-03',
      oOrderLines: [{ LineNumber: 1, ProductID: 'SKU-1', Qty: 2, UoM: 'EA', SalesUnitPrice: 9.99 }],
    });
  });

  it('names missing and unknown columns and lists the expected ones', async () => {
    const header = SALES_HEADER.replace('oOrderLines_Qty', 'Quantity');
    expect(await malformed(`${header}\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n`)).toBe(
      `Missing column(s): oOrderLines_Qty. Unknown column(s): Quantity. Expected columns: ${SALES_COLUMNS}`,
    );
  });

  it('matches names case-sensitively and says so', async () => {
    const header = SALES_HEADER.replace('AccountID', 'accountid');
    expect(await malformed(`${header}\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n`)).toBe(
      `Missing column(s): AccountID. Unknown column(s): accountid. Column names are case-sensitive (accountid). Expected columns: ${SALES_COLUMNS}`,
    );
  });

  it('refuses a duplicate column and an unnamed one', async () => {
    expect(
      await malformed(`${SALES_HEADER},OrdNumber\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99,SO-1\n`),
    ).toBe(`Duplicate column(s): OrdNumber. Expected columns: ${SALES_COLUMNS}`);
    expect(await malformed(`${SALES_HEADER},\nACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99,\n`)).toBe(
      `Unknown column(s): (unnamed column 9). Expected columns: ${SALES_COLUMNS}`,
    );
  });

  it('refuses an empty file and a file with no data rows', async () => {
    for (const empty of ['', '\n\r\n', '\uFEFF', '  \n'])
      expect(await malformed(empty)).toBe('The file is empty');
    expect(await malformed([])).toBe('The file is empty');
    expect(await malformed(SALES_HEADER)).toBe('The file has no data rows');
    expect(await malformed(`\uFEFF${SALES_HEADER}\r\n\r\n`)).toBe('The file has no data rows');
  });
});

describe('decodeCsv: ragged rows and encoding', () => {
  it('names the line of a row with fewer or more cells than the header', async () => {
    expect(
      await malformed(
        sales('ACME,SO-1,2026-02-03,1,"a\nb",2,EA,9.99\nACME,SO-1,2026-02-03,2,SKU-2,1,EA\n'),
      ),
    ).toBe('line 4 has 7 cells; the header has 8');
    expect(await malformed(sales('ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99,extra\n'))).toBe(
      'line 2 has 9 cells; the header has 8',
    );
  });

  it('refuses bytes that are not UTF-8, wherever the chunks are cut', async () => {
    const bytes = Buffer.concat([
      Buffer.from(sales('ACME,SO-1,2026-02-03,1,Caf')),
      Buffer.from([0xe9]),
      Buffer.from(',2,EA,1\n'),
    ]);
    const at = bytes.indexOf(0xe9);
    expect(await malformed([bytes])).toBe(
      `The file is not valid UTF-8 (bad bytes at byte offset ${at})`,
    );
    expect(await malformed(sliced(bytes, 3))).toBe(
      `The file is not valid UTF-8 (bad bytes at byte offset ${at})`,
    );
    expect(await malformed(sliced(bytes, 1))).toMatch(/^The file is not valid UTF-8/);
  });

  it('refuses a file that ends inside a UTF-8 character, and UTF-16', async () => {
    const cut = Buffer.from(sales('ACME,SO-1,2026-02-03,1,SKU,2,EA,☕'), 'utf8');
    expect(await malformed([cut.subarray(0, cut.length - 1)])).toBe(
      `The file is not valid UTF-8 (it ends inside a character, at byte offset ${cut.length - 3})`,
    );
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(EXAMPLE, 'utf16le')]);
    expect(await malformed([utf16])).toBe('The file is UTF-16 text; send it as UTF-8');
  });
});

describe('decodeCsv: cell values', () => {
  it.each([
    ['12', 12],
    ['-3', -3],
    ['4.50', 4.5],
    ['0', 0],
    [' 7 ', 7],
    ['\t8.25', 8.25],
    ['007', 7],
  ])('reads %j as the number %d', (text, expected) => {
    expect(parseNumber(text)).toBe(expected);
  });

  it.each([
    '12abc',
    '',
    ' ',
    '1,000',
    '1e3',
    '1.',
    '.5',
    '+1',
    '--1',
    '-',
    '1.2.3',
    '0x10',
    'NaN',
    'Infinity',
    '１２',
  ])('refuses %j as a number', (text) => {
    expect(parseNumber(text)).toBeUndefined();
  });

  it('reports a bad number at its legacy path and leaves the field out', async () => {
    const [record] = await decode(
      sales(
        'ACME,SO-1,2026-02-03,1,SKU-1,12abc,EA,9.99\nACME,SO-1,2026-02-03,,SKU-2,"1,000",EA,1e3\n',
      ),
    );
    expect(record!.errors).toEqual([
      { path: 'oOrderLines[0].Qty', message: 'Expected a number, received "12abc"' },
      { path: 'oOrderLines[1].LineNumber', message: 'Expected a number, received an empty value' },
      { path: 'oOrderLines[1].Qty', message: 'Expected a number, received "1,000"' },
      { path: 'oOrderLines[1].SalesUnitPrice', message: 'Expected a number, received "1e3"' },
    ]);
    expect(record!.value.oOrderLines).toEqual([
      { LineNumber: 1, ProductID: 'SKU-1', UoM: 'EA', SalesUnitPrice: 9.99 },
      { ProductID: 'SKU-2', UoM: 'EA' },
    ]);
  });

  it('reports a bad order-level number at the plain field name', async () => {
    const layout: CsvLayout = {
      header: [
        { name: 'OrdNumber', type: 'string' },
        { name: 'Qty', type: 'number' },
      ],
    };
    const [good, bad] = await decode('OrdNumber,Qty\nA,5\nB, \n', layout);
    expect(good).toEqual({ value: { OrdNumber: 'A', Qty: 5 }, errors: [], rows: [2] });
    expect(bad).toEqual({
      value: { OrdNumber: 'B' },
      errors: [{ path: 'Qty', message: 'Expected a number, received " "' }],
      rows: [3],
    });
  });

  it('leaves empty text and date cells out, never as "", and keeps other text as given', async () => {
    const [record] = await decode(sales('ACME,SO-1,,1,,2, EA ,1\n'));
    expect(record!.value).toEqual({
      AccountID: 'ACME',
      OrdNumber: 'SO-1',
      oOrderLines: [{ LineNumber: 1, Qty: 2, UoM: ' EA ', SalesUnitPrice: 1 }],
    });
    expect(record!.errors).toEqual([]);
  });

  it('cuts a long bad value in a message', async () => {
    const [record] = await decode(sales(`ACME,SO-1,2026-02-03,1,SKU,${'9'.repeat(50)}x,EA,1\n`));
    expect(record!.errors[0]!.message).toBe(`Expected a number, received "${'9'.repeat(40)}…"`);
  });
});

describe('decodeCsv: grouping rows into orders', () => {
  it('reports order-level values that differ between rows of one order, once per field, naming the lines', async () => {
    const records = await decode(
      sales(
        'ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n' +
          'ACME,SO-1,2026-02-03,2,SKU-2,1,EA,4.50\n' +
          'ACMF,SO-1,2026-02-05,3,SKU-3,1,EA,4.50\n' +
          'ACME,SO-1,2026-02-06,4,SKU-4,1,EA,4.50\n' +
          'ACME,SO-1,,5,SKU-5,1,EA,4.50\n',
      ),
    );
    expect(records).toHaveLength(1);
    expect(records[0]!.errors).toEqual([
      {
        path: 'AccountID',
        message:
          'Expected the same value on every row of this order: line 2 has "ACME", line 4 has "ACMF"',
      },
      {
        path: 'DueOutDate',
        message:
          'Expected the same value on every row of this order: line 2 has "2026-02-03", line 4 has "2026-02-05"',
      },
    ]);
    expect(records[0]!.value.DueOutDate).toBe('2026-02-03');
    expect(records[0]!.rows).toEqual([2, 3, 4, 5, 6]);
    expect(csvLocation(records[0]!, 'DueOutDate', SALES)).toBe('line 2, column DueOutDate');

    const [emptyLater] = await decode(
      sales('ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\nACME,SO-1,,2,SKU-2,1,EA,4.50\n'),
    );
    expect(emptyLater!.errors).toEqual([
      {
        path: 'DueOutDate',
        message:
          'Expected the same value on every row of this order: line 2 has "2026-02-03", line 3 has an empty value',
      },
    ]);
  });

  it('reports an order whose rows are not contiguous on its later part, which stays a record of its own', async () => {
    const records = await decode(
      sales(
        'ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n' +
          'ACME,SO-1,2026-02-03,2,SKU-2,1,EA,4.50\n' +
          'ACME,SO-2,2026-02-04,1,SKU-9,5,BOX,12\n' +
          'ACME,SO-1,2026-02-03,3,SKU-3,1,EA,1\n' +
          'ACME,SO-2,2026-02-04,2,SKU-8,5,BOX,12\n' +
          'ACME,SO-1,2026-02-03,4,SKU-4,1,EA,1\n',
      ),
    );
    expect(records.map((r) => [r.value.OrdNumber, r.rows])).toEqual([
      ['SO-1', [2, 3]],
      ['SO-2', [4]],
      ['SO-1', [5]],
      ['SO-2', [6]],
      ['SO-1', [7]],
    ]);
    expect(errorsOf(records)).toEqual([
      [],
      [],
      [
        {
          path: 'OrdNumber',
          message:
            'Order "SO-1" already appeared at lines 2-3; the rows of one order must be contiguous',
        },
      ],
      [
        {
          path: 'OrdNumber',
          message:
            'Order "SO-2" already appeared at line 4; the rows of one order must be contiguous',
        },
      ],
      [
        {
          path: 'OrdNumber',
          message:
            'Order "SO-1" already appeared at lines 2-3; the rows of one order must be contiguous',
        },
      ],
    ]);
  });

  it('remembers every earlier order of a large file: an early one reappearing after thousands of others is reported with its own lines', async () => {
    // 5000 orders grow the order table several times before SO-7 comes back.
    const rows = Array.from(
      { length: 5000 },
      (_, i) => `ACME,SO-${i},2026-02-03,1,SKU-1,2,EA,9.99\n`,
    );
    const records = await decode(sales(`${rows.join('')}ACME,SO-7,2026-02-03,2,SKU-2,1,EA,4.50\n`));
    expect(records).toHaveLength(5001);
    expect(errorsOf(records).filter((errors) => errors.length > 0)).toEqual([
      [
        {
          path: 'OrdNumber',
          message:
            'Order "SO-7" already appeared at line 9; the rows of one order must be contiguous',
        },
      ],
    ]);
  });

  it('tracks at most maxTrackedOrders orders: a later one reappearing goes unnoticed, an earlier one not', async () => {
    const text = sales(
      'ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\nACME,SO-2,2026-02-03,1,SKU-1,2,EA,9.99\n' +
        'ACME,SO-3,2026-02-03,1,SKU-1,2,EA,9.99\nACME,SO-1,2026-02-03,2,SKU-1,2,EA,9.99\n' +
        'ACME,SO-3,2026-02-03,2,SKU-1,2,EA,9.99\n',
    );
    const records: CsvRecord[] = [];
    for await (const record of decodeCsv(chunks(text), SALES, { maxTrackedOrders: 2 }))
      records.push(record);
    expect(errorsOf(records).map((errors) => errors.map((e) => e.message))).toEqual([
      [],
      [],
      [],
      ['Order "SO-1" already appeared at line 2; the rows of one order must be contiguous'],
      [],
    ]);
  });

  it('makes each row with an empty order number a record of its own', async () => {
    const records = await decode(
      sales('ACME,,2026-02-03,1,SKU-1,2,EA,9.99\nACME,,2026-02-03,2,SKU-2,1,EA,4.50\n'),
    );
    expect(records.map((r) => r.rows)).toEqual([[2], [3]]);
    expect(records.map((r) => r.value.OrdNumber)).toEqual([undefined, undefined]);
    expect(errorsOf(records)).toEqual([[], []]);
  });

  it('yields an order as soon as the next order starts, before reading further input', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    async function* input() {
      yield sales(
        'ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\nACME,SO-2,2026-02-04,1,SKU-9,5,BOX,12\nACME,SO-2,2026-',
      );
      await released; // never resolves unless SO-1 came out first
      yield '02-04,2,SKU-8,5,BOX,12\n';
      finished = true;
    }
    const records = decodeCsv(input(), SALES);
    const first = await records.next();
    expect(first.value?.value.OrdNumber).toBe('SO-1');
    expect(finished).toBe(false);
    release();
    const second = await records.next();
    expect(second.value?.rows).toEqual([3, 4]);
    expect((await records.next()).done).toBe(true);
  }, 5_000); // a decoder that waits for more input before yielding SO-1 never gets it: it times out

  it('stops reading its input when the consumer stops early', async () => {
    let closed = false;
    let pulled = 0;
    async function* input() {
      try {
        yield sales('ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99\n');
        for (;;) {
          pulled++;
          yield `ACME,SO-${pulled + 1},2026-02-03,1,SKU-1,2,EA,9.99\n`;
        }
      } finally {
        closed = true;
      }
    }
    for await (const record of decodeCsv(input(), SALES))
      if (record.value.OrdNumber === 'SO-3') break;
    expect(closed).toBe(true);
    expect(pulled).toBeLessThan(10);
  });

  it('passes on an error of the input itself unchanged', async () => {
    const failure = new Error('connection reset');
    async function* input() {
      yield EXAMPLE;
      throw failure;
    }
    await expect(drain(decodeCsv(input(), SALES))).rejects.toBe(failure);
  });
});

describe('decodeCsv: work orders (three levels)', () => {
  const WORK_HEADER =
    'AccountID,OrdNumber,CreatedDate,FinishedGoods_LineNumber,FinishedGoods_ProductID,FinishedGoods_Qty,FinishedGoods_ExpDelDate,FGParts_ProductID,FGParts_Qty';
  const WORK_FILE = `${WORK_HEADER}
ACME,WO-1,2026-02-01,1,KIT-A,10,2026-03-01,P-1,2
ACME,WO-1,2026-02-01,1,KIT-A,10,2026-03-01,"P-2
rev b",1
ACME,WO-1,2026-02-01,2,KIT-B,5,2026-03-02,P-3,4
ACME,WO-2,2026-02-02,1,KIT-C,1,2026-03-03,P-9,1
`;

  it('groups part rows into finished goods and finished goods into orders', async () => {
    const records = await decode(WORK_FILE, WORK);
    expect(records).toEqual([
      {
        value: {
          AccountID: 'ACME',
          OrdNumber: 'WO-1',
          CreatedDate: '2026-02-01',
          FinishedGoods: [
            {
              LineNumber: 1,
              ProductID: 'KIT-A',
              Qty: 10,
              ExpDelDate: '2026-03-01',
              FGParts: [
                { ProductID: 'P-1', Qty: 2 },
                { ProductID: 'P-2\nrev b', Qty: 1 },
              ],
            },
            {
              LineNumber: 2,
              ProductID: 'KIT-B',
              Qty: 5,
              ExpDelDate: '2026-03-02',
              FGParts: [{ ProductID: 'P-3', Qty: 4 }],
            },
          ],
        },
        errors: [],
        rows: [2, 3, 5],
        lineStarts: [0, 2],
      },
      {
        value: {
          AccountID: 'ACME',
          OrdNumber: 'WO-2',
          CreatedDate: '2026-02-02',
          FinishedGoods: [
            {
              LineNumber: 1,
              ProductID: 'KIT-C',
              Qty: 1,
              ExpDelDate: '2026-03-03',
              FGParts: [{ ProductID: 'P-9', Qty: 1 }],
            },
          ],
        },
        errors: [],
        rows: [6],
        lineStarts: [0],
      },
    ]);
  });

  it('locates finished-good and part fields on their own rows', async () => {
    const [wo1] = await decode(WORK_FILE, WORK);
    expect(csvLocation(wo1!, 'CreatedDate', WORK)).toBe('line 2, column CreatedDate');
    expect(csvLocation(wo1!, 'FinishedGoods[1].ExpDelDate', WORK)).toBe(
      'line 5, column FinishedGoods_ExpDelDate',
    );
    expect(csvLocation(wo1!, 'FinishedGoods[0].FGParts[1].Qty', WORK)).toBe(
      'line 3, column FGParts_Qty',
    );
    expect(csvLocation(wo1!, 'FinishedGoods[0].FGParts[1]', WORK)).toBe('line 3');
    expect(csvLocation(wo1!, 'FinishedGoods[0].FGParts', WORK)).toBe('lines 2-3');
    expect(csvLocation(wo1!, 'FinishedGoods[0]', WORK)).toBe('lines 2-3');
    expect(csvLocation(wo1!, 'FinishedGoods.1.Qty', WORK)).toBe('line 5, column FinishedGoods_Qty');
    // Without lineStarts (a caller that kept only `rows`), the order's lines, still with the column.
    const { lineStarts: _, ...rowsOnly } = wo1!;
    expect(csvLocation(rowsOnly, 'FinishedGoods[0].FGParts[1].Qty', WORK)).toBe(
      'lines 2-5, column FGParts_Qty',
    );
  });

  it('reports finished-good values that differ between its part rows, and a finished good that is not contiguous', async () => {
    const [record] = await decode(
      `${WORK_HEADER}
ACME,WO-1,2026-02-01,1,KIT-A,10,2026-03-01,P-1,2
ACME,WO-1,2026-02-01,1,KIT-A,10,2026-03-09,P-2,x
ACME,WO-1,2026-02-01,2,KIT-B,5,2026-03-02,P-3,4
ACME,WO-1,2026-02-01,1,KIT-A,10,2026-03-01,P-4,1
`,
      WORK,
    );
    expect(record!.errors).toEqual([
      {
        path: 'FinishedGoods[0].ExpDelDate',
        message:
          'Expected the same value on every row of this FinishedGoods entry: line 2 has "2026-03-01", line 3 has "2026-03-09"',
      },
      { path: 'FinishedGoods[0].FGParts[1].Qty', message: 'Expected a number, received "x"' },
      {
        path: 'FinishedGoods[2].LineNumber',
        message:
          'LineNumber "1" already appeared at lines 2-3 of this order; the rows of one FinishedGoods entry must be contiguous',
      },
    ]);
    expect((record!.value.FinishedGoods as unknown[]).length).toBe(3);
    expect(record!.lineStarts).toEqual([0, 2, 3]);
    expect(csvLocation(record!, 'FinishedGoods[0].FGParts[1].Qty', WORK)).toBe(
      'line 3, column FGParts_Qty',
    );
    expect(csvLocation(record!, 'FinishedGoods[2].LineNumber', WORK)).toBe(
      'line 5, column FinishedGoods_LineNumber',
    );
  });
});

describe('decodeCsv: master data (no lines)', () => {
  it('makes every row a product record of its own', async () => {
    const records = await decode(
      'ProductID,AccountID,ShortDesc,LongDesc,UoM\nSKU-1,ACME,Widget,"A widget, blue",EA\nSKU-2,ACME,Gadget,,BOX\nSKU-2,ACME,Gadget,,BOX\n',
      MASTER,
    );
    expect(records).toEqual([
      {
        value: {
          ProductID: 'SKU-1',
          AccountID: 'ACME',
          ShortDesc: 'Widget',
          LongDesc: 'A widget, blue',
          UoM: 'EA',
        },
        errors: [],
        rows: [2],
      },
      {
        value: { ProductID: 'SKU-2', AccountID: 'ACME', ShortDesc: 'Gadget', UoM: 'BOX' },
        errors: [],
        rows: [3],
      },
      {
        value: { ProductID: 'SKU-2', AccountID: 'ACME', ShortDesc: 'Gadget', UoM: 'BOX' },
        errors: [],
        rows: [4],
      },
    ]);
    expect(csvLocation(records[1]!, 'UoM', MASTER)).toBe('line 3, column UoM');
  });
});

describe('csvLocation', () => {
  it('points a line field at its row, a header field at the first row, and anything else at the record', async () => {
    const [so1] = await decode(EXAMPLE);
    expect(csvLocation(so1!, 'oOrderLines[1].Qty', SALES)).toBe('line 3, column oOrderLines_Qty');
    expect(csvLocation(so1!, 'oOrderLines[0].LineNumber', SALES)).toBe(
      'line 2, column oOrderLines_LineNumber',
    );
    expect(csvLocation(so1!, 'DueOutDate', SALES)).toBe('line 2, column DueOutDate');
    expect(csvLocation(so1!, 'oOrderLines[1]', SALES)).toBe('line 3');
    expect(csvLocation(so1!, 'oOrderLines', SALES)).toBe('lines 2-3');
    expect(csvLocation(so1!, '', SALES)).toBe('lines 2-3');
    expect(csvLocation(so1!, 'oOrderLines[7].Qty', SALES)).toBe(
      'lines 2-3, column oOrderLines_Qty',
    );
    expect(csvLocation(so1!, 'oOrderLines[0].Colour', SALES)).toBe('line 2');
    expect(csvLocation(so1!, 'Colour', SALES)).toBe('lines 2-3');
    // It needs only the rows, not the value.
    expect(csvLocation({ value: {}, errors: [], rows: [9] }, 'oOrderLines[0].Qty', SALES)).toBe(
      'line 9, column oOrderLines_Qty',
    );
  });
});

describe('decodeCsv: large files', () => {
  it('streams 200k rows in 64 KiB chunks with flat memory', async () => {
    const gc = exposeGc();
    const ROWS = 200_000;
    async function* file(): AsyncGenerator<Uint8Array> {
      let text = `${SALES_HEADER}\n`;
      for (let i = 0; i < ROWS; i++) {
        text += `ACME,SO-${Math.floor(i / 3)},2026-02-03,${(i % 3) + 1},SKU-${i % 1000},${(i % 7) + 1},EA,${(i % 50) + 0.99}\n`;
        if (text.length >= 64 * 1024) {
          const bytes = Buffer.from(text);
          yield bytes.subarray(0, 64 * 1024);
          text = bytes.subarray(64 * 1024).toString(); // rows are ASCII: no character is cut
        }
      }
      yield Buffer.from(text);
    }
    gc();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    let records = 0;
    let rows = 0;
    let errors = 0;
    const started = performance.now();
    for await (const record of decodeCsv(file(), SALES)) {
      records++;
      rows += record.rows.length;
      errors += record.errors.length;
      if (records % 10_000 === 0) {
        gc(); // what is still reachable, not garbage waiting for a collection
        peak = Math.max(peak, process.memoryUsage().heapUsed);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    expect(records).toBe(Math.ceil(ROWS / 3));
    expect(rows).toBe(ROWS);
    expect(errors).toBe(0);
    const growth = (peak - before) / 2 ** 20;
    console.info(
      `decodeCsv: ${ROWS} rows in ${seconds.toFixed(2)} s (${Math.round(ROWS / seconds)} rows/s, with 20 forced GCs), heap growth ${growth.toFixed(1)} MB`,
    );
    // Keeping every record instead measures ~64 MB here; streaming stays under 10 MB.
    expect(growth).toBeLessThan(32);
  });
});

/** `global.gc` without `--expose-gc` on the command line. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
