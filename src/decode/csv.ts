/**
 * CSV versions of the legacy (v1) shapes, spec §4.3: a header row, then one row per order line
 * (per product for master data, per part for work orders). Array fields are flattened to
 * `<array>_<field>` columns and order-level values repeat on every row of the order; this module
 * folds the rows back into legacy JSON records, streamed, one record in memory at a time.
 *
 * Cell problems (a bad number, rows of one order that disagree) are record errors with a legacy
 * path, so the batch reports them next to the record's validation errors. Problems with the file
 * itself (columns, ragged rows, quoting, encoding) throw `MalformedBody`.
 */
import { MalformedBody } from '../errors.js';
import { lineRange, RecordBuilder } from './csv-records.js';
import type { CsvLayout, CsvRecord } from '../records/legacy/csv-layout.js';
import { readCsvRows } from './csv-rows.js';
import { OrderRanges } from './order-ranges.js';

export type { CsvField, CsvFieldType, CsvLayout, CsvRecord } from '../records/legacy/csv-layout.js';

export interface DecodeCsvOptions {
  /**
   * How many distinct order keys are remembered to detect an order whose rows are not
   * contiguous. Beyond that, later orders are grouped as usual but a reappearance of one of
   * them goes unnoticed; this keeps memory bounded (~30 bytes a key, off the JS heap) on very
   * large files.
   * @default 1_000_000
   */
  readonly maxTrackedOrders?: number;
  /**
   * Columns beyond the layout are refused; with this, each is passed here once (its header
   * name) and its cells are never read. Missing columns are refused all the same.
   */
  readonly ignoreColumn?: (name: string) => void;
  /**
   * The input is the header row and then the file from a later row on, which starts on this line
   * (the second half of a split file, `csv-split.ts`). @default the whole file
   */
  readonly lineAfterHeader?: number;
  /**
   * The table of orders seen, for a caller that compares two halves of one file afterwards.
   * @default a table of its own
   */
  readonly orders?: OrderRanges;
}

/** Streams records out of CSV bytes, in file order; holds one record at a time. Throws `MalformedBody` for file-level problems. */
export async function* decodeCsv(
  input: AsyncIterable<Uint8Array | string>,
  layout: CsvLayout,
  options: DecodeCsvOptions = {},
): AsyncGenerator<CsvRecord> {
  const columns = expectedColumns(layout);
  let builder: RecordBuilder | undefined;
  let sawData = false;
  const rowOptions =
    options.lineAfterHeader === undefined ? {} : { lineAfterHeader: options.lineAfterHeader };
  for await (const batch of readCsvRows(input, rowOptions)) {
    const { cells, lines } = batch;
    let i = 0;
    if (builder === undefined) {
      builder = new RecordBuilder(
        layout,
        headerIndexes(cells[0]!, columns, options.ignoreColumn),
        options.orders ?? new OrderRanges(options.maxTrackedOrders ?? 1_000_000),
        cells[0]!.length,
      );
      i = 1;
    }
    for (; i < cells.length; i++) {
      sawData = true;
      const done = builder.add(cells[i]!, lines[i]!);
      if (done !== undefined) yield done;
    }
  }
  if (builder === undefined) throw new MalformedBody({ detail: 'The file is empty' });
  if (!sawData) throw new MalformedBody({ detail: 'The file has no data rows' });
  const last = builder.finish();
  if (last !== undefined) yield last;
}

/** Column names of a layout, in its order: header fields, `<lines>_<field>`, `<parts>_<field>`. */
function expectedColumns(layout: CsvLayout): string[] {
  const { lines } = layout;
  const names = layout.header.map((f) => f.name);
  if (lines) {
    names.push(...lines.fields.map((f) => `${lines.name}_${f.name}`));
    if (lines.parts) names.push(...lines.parts.fields.map((f) => `${lines.parts!.name}_${f.name}`));
  }
  return names;
}

/** Where each expected column sits in the file's header row; every column required, nothing else allowed (unless ignored). */
function headerIndexes(
  row: readonly string[],
  expected: readonly string[],
  ignoreColumn?: (name: string) => void,
): Map<string, number> {
  const found = new Map<string, number>();
  const duplicate = new Set<string>();
  const unknown: string[] = [];
  const wanted = new Set(expected);
  row.forEach((raw, index) => {
    const name = raw.trim();
    if (!wanted.has(name)) unknown.push(name === '' ? `(unnamed column ${index + 1})` : name);
    else if (found.has(name)) duplicate.add(name);
    else found.set(name, index);
  });
  if (ignoreColumn) unknown.splice(0).forEach(ignoreColumn);
  const missing = expected.filter((name) => !found.has(name));
  if (missing.length + unknown.length + duplicate.size === 0) return found;
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`Missing column(s): ${missing.join(', ')}.`);
  if (unknown.length > 0) parts.push(`Unknown column(s): ${unknown.join(', ')}.`);
  if (duplicate.size > 0) parts.push(`Duplicate column(s): ${[...duplicate].join(', ')}.`);
  const caseOnly = unknown.filter((u) => missing.some((m) => m.toLowerCase() === u.toLowerCase()));
  if (caseOnly.length > 0) parts.push(`Column names are case-sensitive (${caseOnly.join(', ')}).`);
  parts.push(`Expected columns: ${expected.join(', ')}`);
  throw new MalformedBody({ detail: parts.join(' ') });
}

/**
 * Where a legacy path of a decoded record sits in the file, for error messages:
 * `line 7, column oOrderLines_Qty`. A header field points at the record's first row; a path that
 * names no single row (the record, the line array, an unknown index) gives the record's lines.
 */
export function csvLocation(record: CsvRecord, path: string, layout: CsvLayout): string {
  const { rows, lineStarts } = record;
  const all = lineRange(rows[0]!, rows[rows.length - 1]!);
  const steps = path
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .filter((s) => s !== '');
  const [top, index, field, partIndex, partField] = steps;
  const { lines } = layout;
  const at = (line: number | undefined, column?: string): string =>
    `${line === undefined ? all : `line ${line}`}${column === undefined ? '' : `, column ${column}`}`;

  if (steps.length === 1 && layout.header.some((f) => f.name === top)) return at(rows[0], top);
  if (lines === undefined || top !== lines.name || index === undefined || !/^\d+$/.test(index))
    return all;
  const i = Number(index);
  const parts = lines.parts;
  // The rows of line i: one row per line, or (work orders) the run of part rows starting at lineStarts[i].
  let lineRows: readonly number[] | undefined;
  if (parts === undefined) lineRows = i < rows.length ? [rows[i]!] : undefined;
  else if (lineStarts !== undefined && i < lineStarts.length)
    lineRows = rows.slice(lineStarts[i], lineStarts[i + 1] ?? rows.length);
  const span =
    lineRows === undefined ? all : lineRange(lineRows[0]!, lineRows[lineRows.length - 1]!);

  if (field === undefined) return span;
  if (lines.fields.some((f) => f.name === field) && steps.length === 3)
    return at(lineRows?.[0], `${lines.name}_${field}`);
  if (parts === undefined || field !== parts.name) return span;
  if (partIndex === undefined || !/^\d+$/.test(partIndex)) return span;
  const partRow = lineRows?.[Number(partIndex)];
  if (partField === undefined) return partRow === undefined ? span : `line ${partRow}`;
  if (steps.length === 5 && parts.fields.some((f) => f.name === partField)) {
    return partRow === undefined
      ? `${span}, column ${parts.name}_${partField}`
      : at(partRow, `${parts.name}_${partField}`);
  }
  return partRow === undefined ? span : `line ${partRow}`;
}
