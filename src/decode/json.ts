import { MalformedBody } from '../errors.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Deepest nesting of arrays and objects accepted. Real batches need 6; V8 parses far deeper
 * text without complaint, but every later recursive step (JSON.stringify for publishing,
 * message ids, logs) would overflow the stack on it: a 500 from one hostile body.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether the JSON text nests deeper than `limit`: one pass over the bytes, strings skipped. A
 * string is run through in its own inner loop rather than with an in-string flag tested on every
 * byte: most bytes of a record are inside strings, and this halves the pass (~1 µs a record).
 */
export function nestsDeeperThan(bytes: Uint8Array, limit: number): boolean {
  const length = bytes.length;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === 0x22) {
      // A string: to its closing quote, a backslash skipping the byte it escapes.
      for (i++; i < length; i++) {
        const inner = bytes[i]!;
        if (inner === 0x22) break;
        if (inner === 0x5c) i++;
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > limit) return true;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return false;
}

/** Any JSON value; an empty, non-UTF-8, too deeply nested or unparseable body is a 400 that says which. */
export function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) throw new MalformedBody({ detail: 'The body is empty.' });
  if (nestsDeeperThan(bytes, MAX_JSON_DEPTH)) {
    throw new MalformedBody({
      detail: `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`,
    });
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new MalformedBody({ detail: 'The body is not valid UTF-8.' });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new MalformedBody({
      detail: `The body is not valid JSON: ${(error as Error).message.slice(0, 200)}`,
    });
  }
  return value;
}

/** A JSON array of records; anything else is a 400 that says what was received. */
export function parseJsonArray(bytes: Buffer): unknown[] {
  const value = parseJson(bytes);
  if (!Array.isArray(value)) {
    const received = value === null ? 'null' : typeof value;
    throw new MalformedBody({ detail: `Expected a JSON array of records, received ${received}.` });
  }
  return value;
}
