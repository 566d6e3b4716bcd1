import type { H3Event } from 'h3';
import { MalformedBody, PayloadTooLarge, UnsupportedMediaType } from '../errors.js';

/** `application/json` or any `+json` media type, optionally with `charset=utf-8`. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

export function assertJsonMediaType(event: H3Event): void {
  const type = event.req.headers.get('content-type');
  if (!type || !JSON_MEDIA_TYPE.test(type.trim())) {
    throw new UnsupportedMediaType({
      detail: `Send the batch as Content-Type: application/json (UTF-8); received ${type ? `"${type.slice(0, 100)}"` : 'no Content-Type'}.`,
    });
  }
}

/**
 * Reads the body up to `limit` bytes. An honest Content-Length over the limit is refused
 * before a byte is read; a chunked body is cut off as soon as it passes the limit.
 */
export async function readBodyBytes(event: H3Event, limit: number): Promise<Buffer> {
  const tooLarge = () => new PayloadTooLarge({ detail: `The body exceeds the limit of ${limit} bytes.` });
  const declared = event.req.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  const stream = event.req.body;
  if (!stream) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength) : Buffer.concat(chunks, size);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** A JSON array of records; anything else is a 400 that says what was received. */
export function parseJsonArray(bytes: Buffer): unknown[] {
  if (bytes.length === 0) throw new MalformedBody({ detail: 'The body is empty: send a JSON array of records.' });
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
  if (!Array.isArray(value)) {
    const received = value === null ? 'null' : typeof value;
    throw new MalformedBody({ detail: `Expected a JSON array of records, received ${received}.` });
  }
  return value;
}
