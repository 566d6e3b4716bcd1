import { MalformedBody } from '../errors.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Any JSON value; an empty, non-UTF-8 or unparseable body is a 400 that says which. */
export function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) throw new MalformedBody({ detail: 'The body is empty.' });
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
    throw new MalformedBody({ detail: `The body is not valid JSON: ${(error as Error).message.slice(0, 200)}` });
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
