/**
 * Where a large v2-JSON file (one array of records) can be cut in two so that each half is decoded
 * and validated on its own core (`ingest/halves.ts`): after the first top-level element that ends
 * at or past the middle. The first half is the bytes before that element's end, then `]`; the
 * second is `[`, then the bytes after the comma that follows it. Each is a JSON array of its own,
 * and together they hold the file's records in order (no record spans the cut; v2 records need no
 * grouping across rows, unlike CSV orders).
 *
 * Found by the same structure scan the one-pass decoder runs (`ArrayScanner`: strings, escapes,
 * nesting), over the bytes up to the cut. A file whose structure breaks before the cut, or whose
 * last record spans the middle, has no cut: it is read in one pass, which reports any error
 * exactly as always.
 */
import { open } from 'node:fs/promises';
import { isIngestError } from '../errors.js';
import { ArrayScanner, COMMA, isSpace, MAX_ELEMENT_BYTES } from './json-array.js';

export interface JsonSplit {
  /** The offset just past the last element of the first half: the first half is the bytes before it, then `]`. */
  readonly end: number;
  /** The offset of the comma after that element: the second half is `[`, then the bytes after it. */
  readonly comma: number;
}

/** The file is scanned in chunks of this size up to the middle… */
const CHUNK = 1 << 20;
/** …and of this size past it, where the first element to end is all that is looked for. */
const PAST_MIDDLE_CHUNK = 16 * 1024;
/** Between an element and its comma, at most this much white space is looked through. */
const GAP_BYTES = 64 * 1024;

/**
 * A cut near the middle of the JSON array in the file at `path` (`size` bytes), or undefined when
 * there is none: the structure breaks before it, or no element ends within `MAX_ELEMENT_BYTES`
 * past the middle followed by a comma (an element larger than that is refused anyway).
 */
export async function findJsonSplit(path: string, size: number): Promise<JsonSplit | undefined> {
  const middle = Math.floor(size / 2);
  let end: number | undefined;
  const scanner = new ArrayScanner(MAX_ELEMENT_BYTES, (at) => {
    if (end === undefined && at >= middle) end = at;
  });
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let position = 0;
    while (end === undefined && position < Math.min(size, middle + MAX_ELEMENT_BYTES)) {
      const length = position < middle ? Math.min(CHUNK, middle - position) : PAST_MIDDLE_CHUNK;
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      if (bytesRead === 0) return undefined;
      // The elements it returns are views of `buffer` or copies: neither outlives this turn.
      scanner.scan(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    if (end === undefined) return undefined;
    const { bytesRead } = await handle.read(buffer, 0, GAP_BYTES, end);
    for (let i = 0; i < bytesRead; i++) {
      const b = buffer[i]!;
      if (b === COMMA) return { end, comma: end + i };
      if (!isSpace(b)) return undefined; // `]`: the element was the array's last
    }
    return undefined;
  } catch (error) {
    // Broken structure before the cut: the one pass reports it.
    if (isIngestError(error)) return undefined;
    throw error;
  } finally {
    await handle.close();
  }
}
