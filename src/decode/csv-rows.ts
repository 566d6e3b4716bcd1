/**
 * The physical side of CSV decoding: bytes in, rows of cells out, each with the file line it
 * starts on. Everything that makes the file unreadable as CSV (bad UTF-8, broken quoting, an
 * endless quoted value) becomes a `MalformedBody` naming the line; what the cells mean is
 * `csv.ts`'s business.
 *
 * csv-parse does the parsing, fed one bounded slice at a time, so memory stays flat whatever the
 * file size. Rows are taken in its synchronous `on_record` hook rather than read from the
 * stream: nothing queues in the stream's buffer, and when csv-parse fails we know exactly which
 * rows came before, hence the line of the broken one.
 */
import { isUtf8 } from 'node:buffer';
import { CsvError, parse, type Parser } from 'csv-parse';
import { MalformedBody } from '../errors.js';

/**
 * The rows parsed from one slice of input: `cells[i]` starts on file line `lines[i]` (1-based).
 * Blank lines are already left out. The two arrays are reused for the next slice.
 */
export interface RowBatch {
  readonly cells: string[][];
  readonly lines: number[];
}

/** At most this many bytes go to the parser at once, so one batch stays small whatever the caller's chunk size. */
const SLICE = 64 * 1024;

/**
 * A row longer than this (in characters) is refused: it is almost always a quote left open,
 * which would otherwise swallow the rest of a large file into one value.
 */
export const MAX_ROW_CHARS = 1024 * 1024;

/**
 * Rows of a CSV input, one batch per slice of input, in file order. Accepts LF, CRLF and CR
 * line ends (mixed too), an optional UTF-8 BOM, and no final line end. The first batch's first
 * row is the header; its names are only used here to name columns in error messages.
 */
export async function* readCsvRows(
  input: AsyncIterable<Uint8Array | string>,
  options: {
    /**
     * The file line of the row after the header: the input is the header row and then a part of
     * the file from further on (the second half of a split file, `csv-split.ts`). @default the line after the header's
     */
    readonly lineAfterHeader?: number;
    /** The file's own delimiter, quote and escape (a mapped CSV's `csv` keys). @default `,` `"` `"` */
    readonly dialect?: {
      readonly delimiter: string;
      readonly quote: string;
      readonly escape: string;
    };
  } = {},
): AsyncGenerator<RowBatch> {
  const batch: RowBatch = { cells: [], lines: [] };
  // Line bookkeeping. csv-parse's own `info.lines` counts a quoted CRLF twice, so it is only
  // used to notice that a row spans more than one line; those rows are counted here.
  let nextLine = 1;
  let parsedLines = 0;
  let header: string[] | undefined;

  const parser: Parser = parse({
    bom: true,
    // Explicit, because auto-discovery fixes one line end for the whole file from its first line.
    record_delimiter: ['\r\n', '\n', '\r'],
    // Ragged rows are reported by csv.ts with the header's width; csv-parse would only say "invalid record length".
    relax_column_count: true,
    max_record_size: MAX_ROW_CHARS,
    ...options.dialect,
    on_record: (cells: string[], info) => {
      const start = nextLine;
      nextLine += info.lines - parsedLines === 1 ? 1 : 1 + countLineBreaks(cells);
      parsedLines = info.lines;
      if (cells.length === 1 && isBlank(cells[0]!)) return null;
      if (header === undefined) {
        header = cells;
        if (options.lineAfterHeader !== undefined) nextLine = options.lineAfterHeader;
      }
      batch.cells.push(cells);
      batch.lines.push(start);
      return null; // nothing goes to the stream's readable side
    },
  });
  // Errors arrive through the write/end callbacks; this listener only keeps the emitter quiet.
  parser.on('error', () => {});

  const feed = (slice: Uint8Array): Promise<void> =>
    new Promise((resolve, reject) => {
      parser.write(slice, (error) => (error ? reject(error) : resolve()));
    });
  const fail = (error: unknown): never => {
    if (error instanceof CsvError)
      throw new MalformedBody({ detail: describeCsvError(error, nextLine, header), cause: error });
    throw error;
  };

  const utf8 = new Utf8Check();
  try {
    for await (const chunk of input) {
      const bytes = typeof chunk === 'string' ? utf8.text(chunk) : utf8.check(chunk);
      for (let offset = 0; offset < bytes.length; offset += SLICE) {
        await feed(bytes.subarray(offset, offset + SLICE)).catch(fail);
        if (batch.cells.length > 0) {
          yield batch;
          batch.cells.length = 0;
          batch.lines.length = 0;
        }
      }
    }
    utf8.end();
    await new Promise<void>((resolve, reject) => {
      parser.once('error', reject);
      parser.once('finish', resolve);
      parser.end();
    }).catch(fail);
    if (batch.cells.length > 0) yield batch;
  } finally {
    parser.destroy();
  }
}

/** Line breaks inside the (quoted) values of one row; CRLF, LF and a lone CR count one each. */
function countLineBreaks(cells: readonly string[]): number {
  let count = 0;
  for (const cell of cells) {
    for (let i = 0; i < cell.length; i++) {
      const c = cell.charCodeAt(i);
      if (c === 10) count++;
      else if (c === 13) {
        count++;
        if (cell.charCodeAt(i + 1) === 10) i++;
      }
    }
  }
  return count;
}

function isBlank(cell: string): boolean {
  for (let i = 0; i < cell.length; i++) {
    const c = cell.charCodeAt(i);
    if (c !== 32 && c !== 9) return false;
  }
  return true;
}

/** csv-parse's error codes in a sentence a partner can act on; never its stack or internals. */
function describeCsvError(
  error: CsvError,
  line: number,
  header: readonly string[] | undefined,
): string {
  const index = typeof error.column === 'number' ? error.column : undefined;
  const name = index === undefined ? undefined : header?.[index]?.trim();
  const where = `line ${line}${name ? `, column ${name}` : index === undefined ? '' : `, cell ${index + 1}`}`;
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return `Broken quoting on ${where}: a quoted value is never closed (the quote runs to the end of the file)`;
    case 'CSV_INVALID_CLOSING_QUOTE':
      return `Broken quoting on ${where}: a closing quote must be followed by a comma or the end of the line; write a quote inside a quoted value as two quotes ("")`;
    case 'INVALID_OPENING_QUOTE':
      return `Broken quoting on ${where}: a quote inside an unquoted value; put the whole value in quotes and write each quote inside it as two quotes ("")`;
    case 'CSV_MAX_RECORD_SIZE':
      return `The row starting on line ${line} is longer than ${MAX_ROW_CHARS} characters; is a quote left open?`;
    default:
      return `The file could not be read as CSV at ${where}`;
  }
}

/**
 * Checks that byte chunks are UTF-8, holding back a character split across two chunks.
 * csv-parse would otherwise decode bad bytes to U+FFFD without a word.
 */
class Utf8Check {
  private carry: Buffer | undefined;
  private offset = 0;

  check(chunk: Uint8Array): Uint8Array {
    let bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.offset === 0 && this.carry === undefined && bytes.length >= 2 && isUtf16Bom(bytes)) {
      throw new MalformedBody({ detail: 'The file is UTF-16 text; send it as UTF-8' });
    }
    if (this.carry !== undefined) {
      bytes = Buffer.concat([this.carry, bytes]);
      this.carry = undefined;
    }
    const cut = bytes.length - incompleteTail(bytes);
    if (!isUtf8(bytes.subarray(0, cut))) {
      throw new MalformedBody({
        detail: `The file is not valid UTF-8 (bad bytes at byte offset ${this.offset + firstInvalid(bytes)})`,
      });
    }
    if (cut < bytes.length) this.carry = Buffer.from(bytes.subarray(cut));
    this.offset += cut;
    return bytes.subarray(0, cut);
  }

  /** Text chunks are already decoded; a byte chunk before one must not have ended mid-character. */
  text(chunk: string): Buffer {
    this.end();
    const bytes = Buffer.from(chunk, 'utf8');
    this.offset += bytes.length;
    return bytes;
  }

  end(): void {
    if (this.carry !== undefined) {
      throw new MalformedBody({
        detail: `The file is not valid UTF-8 (it ends inside a character, at byte offset ${this.offset})`,
      });
    }
  }
}

const isUtf16Bom = (b: Uint8Array): boolean =>
  (b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff);

/** Bytes at the end that start a multi-byte character whose remaining bytes are in the next chunk. */
function incompleteTail(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= 3 && back <= n; back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/** Offset of the first byte that breaks UTF-8; only called once a chunk is known to be bad. */
function firstInvalid(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const size =
      b < 0x80
        ? 1
        : b >= 0xc2 && b <= 0xdf
          ? 2
          : b >= 0xe0 && b <= 0xef
            ? 3
            : b >= 0xf0 && b <= 0xf4
              ? 4
              : 0;
    // isUtf8 on the one character also refuses overlong forms, surrogates and stray continuation bytes.
    if (size === 0 || !isUtf8(bytes.subarray(i, i + size))) return i;
    i += size;
  }
  return i;
}
