/**
 * The input side of a mapped format: a partner's own CSV or JSON file as a stream of input
 * objects, each with its place in the file (a CSV row's line, a JSON object's index), for the
 * mapping to see and for errors to name.
 */
import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../errors.js';
import { readCsvRows } from './csv-rows.js';
import { parseJson } from './json.js';
import type { CompiledMapping } from './mapping.js';

/** How a mapped CSV is written (the pipeline's `csv` keys, defaults applied). */
export interface MappedCsvOptions {
  readonly delimiter: string;
  readonly quote: string;
  readonly escape: string;
  readonly encoding: 'utf-8' | 'windows-1252' | 'iso-8859-1';
  readonly skipLines: number;
  readonly header: true | readonly string[];
}

/** One input object and its place: a CSV line, or a JSON object's index + 1. */
export interface InputItem {
  readonly value: Record<string, unknown>;
  readonly place: number;
}

/** Rows of a CSV file as objects keyed by the header, empty cells left out, streamed. */
export async function* csvItems(
  chunks: AsyncIterable<Uint8Array>,
  options: MappedCsvOptions,
  /** The header row, then the file from this line on (the second half of a split file). */
  lineAfterHeader?: number,
): AsyncGenerator<InputItem> {
  const { delimiter, quote, skipLines } = options;
  let names = options.header === true ? undefined : options.header;
  const rows = readCsvRows(decoded(chunks, options.encoding), {
    dialect: { delimiter, quote, escape: options.escape },
    ...(lineAfterHeader !== undefined && { lineAfterHeader }),
  });
  for await (const { cells, lines } of rows) {
    for (let i = 0; i < cells.length; i++) {
      const line = lines[i] ?? 0;
      if (line <= skipLines) continue;
      const row = cells[i] ?? [];
      if (names === undefined) {
        names = row.map((name) => name.trim());
        continue;
      }
      if (row.length !== names.length)
        throw new MalformedBody({
          detail: `Line ${line} has ${row.length} cell(s); the header has ${names.length} (is the delimiter "${delimiter}"?)`,
        });
      const value: Record<string, unknown> = {};
      for (let c = 0; c < row.length; c++) {
        const cell = row[c];
        if (cell !== undefined && cell !== '') value[names[c] ?? ''] = cell;
      }
      yield { value, place: line };
    }
  }
}

/** UTF-8 passes as bytes (csv-rows.ts checks it); the single-byte encodings are decoded to text. */
async function* decoded(
  chunks: AsyncIterable<Uint8Array>,
  encoding: MappedCsvOptions['encoding'],
): AsyncGenerator<Uint8Array | string> {
  if (encoding === 'utf-8') {
    yield* chunks;
    return;
  }
  // WHATWG maps the label iso-8859-1 to windows-1252; Node's latin1 is the exact ISO table.
  const windows = encoding === 'windows-1252' ? new TextDecoder('windows-1252') : undefined;
  for await (const chunk of chunks)
    yield windows ? windows.decode(chunk, { stream: true }) : Buffer.from(chunk).toString('latin1');
}

/**
 * The input objects of a JSON file: the document (read whole, up to `maxBytes`), then the
 * array (or one object) the `records` path finds in it.
 */
export async function* jsonItems(
  path: string,
  records: { readonly text: string; readonly find: CompiledMapping },
  maxBytes: number,
): AsyncGenerator<InputItem> {
  const { size } = await stat(path);
  if (size > maxBytes)
    throw new PayloadTooLarge({
      detail: `The JSON file has ${size} bytes; JSON files are limited to ${maxBytes} bytes.`,
    });
  const document = parseJson(await readFile(path));
  let found: unknown;
  try {
    found = records.text === '$' ? document : await records.find.evaluate(document);
  } catch (error) {
    throw new MalformedBody({
      detail: `The records path "${records.text}" failed on this file: ${(error as Error).message}`,
    });
  }
  if (found === undefined)
    throw new MalformedBody({
      detail: `The records path "${records.text}" finds nothing in the file`,
    });
  const list = Array.isArray(found) ? found : [found];
  for (let index = 0; index < list.length; index++) {
    const value = list[index];
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new MalformedBody({
        detail: `${jsonPlace(records.text, index + 1)} is not an object: the records path must find objects`,
      });
    yield { value: value as Record<string, unknown>, place: index + 1 };
  }
}

/** A JSON object's place in words: `orders[3]` (0-based, as a JSON path). */
export const jsonPlace = (records: string, place: number): string =>
  `${records === '$' ? '$' : records}[${place - 1}]`;
