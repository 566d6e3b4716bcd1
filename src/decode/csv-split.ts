/**
 * Where a large CSV file can be cut in two so that each half is decoded and validated on its own
 * core (`ingest/halves.ts`) and the records come out exactly as one pass would make them: the cut
 * falls at the start of a row that starts a new record (its group key differs from the row
 * before), never inside a quoted value, and the second half knows the file line it starts on.
 *
 * Found by one scan of the bytes before the middle, counting quotes and line breaks: in CSV as
 * csv-parse reads it here (no relaxed quoting), a byte is inside a quoted value exactly when an odd
 * number of quotes come before it. A file that csv-parse would refuse may be cut in a wrong place;
 * its first half then fails to parse, and the caller reads the file in one pass instead, which
 * reports the error exactly as always.
 */
import { open } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';

export interface CsvSplit {
  /** Bytes up to the end of the header row (its line break included): the second half is read after them. */
  readonly headerEnd: number;
  /** The first byte of the second half: the start of a row that starts a new record. */
  readonly at: number;
  /** The file line that row starts on (1-based, as `readCsvRows` numbers lines). */
  readonly line: number;
}

/** How far past the middle a record boundary is looked for before the file is read in one pass. */
const SEARCH_BYTES = 1 << 20;
/** As many rows at most (each is parsed on its own here: an order of more rows is not worth the wait). */
const SEARCH_ROWS = 4096;
/** The first half is scanned in chunks of this size. */
const CHUNK = 1 << 20;

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/**
 * A cut near the middle of the file at `path` (`size` bytes), or undefined when there is none
 * worth making: the header is not a plain first row, it lacks `groupBy`, or no record starts
 * within `SEARCH_BYTES` or `SEARCH_ROWS` of the middle. `groupBy` is the header column whose equal values on
 * consecutive rows make one record (none: every row is a record).
 */
export async function findCsvSplit(
  path: string,
  size: number,
  groupBy: string | undefined,
): Promise<CsvSplit | undefined> {
  const handle = await open(path, 'r');
  const read = async (position: number, length: number, into?: Buffer): Promise<Buffer> => {
    const bytes = into ?? Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await handle.read(bytes, done, length - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return bytes.subarray(0, done);
  };
  try {
    // The header: the first row, whole within the first SEARCH_BYTES.
    const [header] = rowsIn(await read(0, Math.min(size, SEARCH_BYTES)), 0, 1, size);
    const headerCells = header && cellsOf(header.bytes);
    if (!header || headerCells === undefined || isBlank(headerCells)) return undefined;
    const groupAt =
      groupBy === undefined ? -1 : headerCells.findIndex((name) => name.trim() === groupBy);
    if (groupAt < 0 && groupBy !== undefined) return undefined;
    const headerEnd = header.start + header.bytes.length;

    // The last row start at or before the middle, and its line: one scan of the first half.
    const middle = Math.floor(size / 2);
    const scan = new RowScanner();
    let last = { start: 0, line: 1 };
    let position = 0;
    const buffer = Buffer.allocUnsafe(CHUNK); // one buffer for the whole scan
    scanning: while (position < size) {
      const chunk = await read(position, Math.min(CHUNK, size - position), buffer);
      for (let from = 0; ; ) {
        const end = scan.nextRowEnd(chunk, from);
        if (end < 0) break;
        if (position + end > middle) break scanning;
        last = { start: position + end, line: scan.line };
        from = end;
      }
      position += chunk.length;
    }
    if (last.start < headerEnd) return undefined;

    // The rows from there on: the first of them that starts a record, past the first.
    const window = await read(last.start, Math.min(size - last.start, SEARCH_BYTES));
    const cut = firstRecordStart(rowsIn(window, last.start, last.line, size), groupAt);
    return cut && { headerEnd, at: cut.start, line: cut.line };
  } finally {
    await handle.close();
  }
}

interface Row {
  readonly start: number;
  readonly line: number;
  readonly bytes: Buffer;
}

/** The first complete rows of `bytes` (at most `SEARCH_ROWS`), which begin with a row at file offset `start`, on `line`. */
function rowsIn(bytes: Buffer, start: number, line: number, size: number): Row[] {
  const scan = new RowScanner(line);
  const rows: Row[] = [];
  let from = 0;
  while (rows.length < SEARCH_ROWS) {
    const rowLine = scan.line;
    const end = scan.nextRowEnd(bytes, from);
    // The file's last row may end without a line break.
    if (end < 0) {
      if (start + bytes.length === size && from < bytes.length)
        rows.push({ start: start + from, line: rowLine, bytes: bytes.subarray(from) });
      return rows;
    }
    rows.push({ start: start + from, line: rowLine, bytes: bytes.subarray(from, end) });
    from = end;
  }
  return rows;
}

/**
 * The first row after the first that starts a record: a non-blank row whose key is empty or
 * differs from the key of the last non-blank row before it.
 */
function firstRecordStart(rows: readonly Row[], groupAt: number): Row | undefined {
  let previousKey: string | undefined;
  for (let i = 0; i < rows.length; i++) {
    const cells = cellsOf(rows[i]!.bytes);
    if (cells === undefined) return undefined; // csv-parse would refuse it: one pass says why
    if (isBlank(cells)) continue;
    const key = groupAt < 0 ? '' : (cells[groupAt] ?? '');
    if (i > 0 && previousKey !== undefined && (key === '' || key !== previousKey)) return rows[i];
    previousKey = key;
  }
  return undefined;
}

/** One row's cells, parsed as `readCsvRows` parses them; undefined if csv-parse refuses the row. */
function cellsOf(bytes: Buffer): string[] | undefined {
  try {
    const rows = parse(bytes, {
      bom: true,
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
    }) as string[][];
    return rows.length === 1 ? rows[0] : rows.length === 0 ? [''] : undefined;
  } catch {
    return undefined;
  }
}

/** `readCsvRows` leaves out a row of one cell that is only spaces and tabs. */
function isBlank(cells: readonly string[]): boolean {
  return cells.length === 1 && /^[ \t]*$/.test(cells[0]!);
}

/**
 * Finds row ends (line breaks outside quoted values) across chunks, and counts every line break
 * (CRLF, LF and a lone CR count one each, inside quoted values too) as `readCsvRows` numbers lines.
 */
class RowScanner {
  private quoted = false;
  /** The last byte seen was a CR: an LF right after it belongs to the same line break. */
  private afterCr = false;

  /** @param line the line the next row starts on. */
  constructor(public line = 1) {}

  /** The offset in `bytes` where the next row starts (from `from` on), or -1 when the chunk ends first. */
  nextRowEnd(bytes: Uint8Array, from: number): number {
    for (let i = from; i < bytes.length; i++) {
      const c = bytes[i]!;
      if (this.afterCr) {
        this.afterCr = false;
        if (c === LF) {
          if (!this.quoted) return i + 1; // the LF of a CRLF: the row ends after it
          continue;
        }
        if (!this.quoted) return i; // a lone CR ended the row; this byte starts the next
      }
      if (c === QUOTE) this.quoted = !this.quoted;
      else if (c === LF) {
        this.line += 1;
        if (!this.quoted) return i + 1;
      } else if (c === CR) {
        this.line += 1;
        this.afterCr = true; // where the row ends is known at the next byte
      }
    }
    return -1;
  }
}
