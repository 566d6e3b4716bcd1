import type { H3Event } from 'h3';
import { PayloadTooLarge, RequestAborted, UnsupportedMediaType } from '../errors.js';

/** `application/json` or any `+json` media type, optionally with `charset=utf-8`. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const CSV_MEDIA_TYPE =
  /^text\/csv\s*(?:;\s*(?:charset\s*=\s*"?utf-8"?|header\s*=\s*present)\s*)*$/i;

export type BodyFormat = 'json' | 'csv';

/** The body's format from its Content-Type, among those the endpoint takes; 415 otherwise. */
export function bodyFormat(event: H3Event, accepted: readonly BodyFormat[]): BodyFormat {
  const type = event.req.headers.get('content-type')?.trim();
  if (type && accepted.includes('json') && JSON_MEDIA_TYPE.test(type)) return 'json';
  if (type && accepted.includes('csv') && CSV_MEDIA_TYPE.test(type)) return 'csv';
  const expected = accepted
    .map((f) => (f === 'json' ? 'application/json' : 'text/csv'))
    .join(' or ');
  throw new UnsupportedMediaType({
    detail: `Send the batch as Content-Type: ${expected} (UTF-8); received ${type ? `"${type.slice(0, 100)}"` : 'no Content-Type'}.`,
  });
}

/**
 * The body as a stream of chunks, cut off with 413 as soon as it passes `limit`. An honest
 * Content-Length over the limit is refused before a byte is read.
 */
export async function* limitedBody(event: H3Event, limit: number): AsyncGenerator<Uint8Array> {
  const tooLarge = () =>
    new PayloadTooLarge({ detail: `The body exceeds the limit of ${limit} bytes.` });
  const declared = event.req.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  // Over a real socket, read Node's request stream directly: the web-stream wrapper srvx puts
  // around it costs ~5% of a small batch's CPU.
  const nodeRequest = (event.req as { runtime?: { node?: { req?: AsyncIterable<Buffer> } } })
    .runtime?.node?.req;
  if (nodeRequest) {
    let received = 0;
    try {
      for await (const chunk of nodeRequest) {
        received += chunk.byteLength;
        if (received > limit) throw tooLarge(); // node discards the rest once the 413 is sent
        yield chunk;
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') throw error;
      throw new RequestAborted({
        detail: `The connection closed after ${received} bytes of the body.`,
        cause: error,
      });
    }
    return;
  }
  const stream = event.req.body;
  if (!stream) return;
  let size = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      size += value.byteLength;
      if (size > limit) throw tooLarge();
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** The body's chunks as received (no copy into one buffer). */
export async function bodyChunks(event: H3Event, limit: number): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of limitedBody(event, limit)) chunks.push(chunk);
  return chunks;
}

/** The chunks as one buffer; no copy when there is one chunk. */
export function joinChunks(chunks: readonly Uint8Array[]): Buffer {
  return chunks.length === 1
    ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength)
    : Buffer.concat(chunks);
}

export async function readBodyBytes(event: H3Event, limit: number): Promise<Buffer> {
  return joinChunks(await bodyChunks(event, limit));
}

/** Reads the same chunks again on every call. */
export function replay(chunks: readonly Uint8Array[]): () => AsyncIterable<Uint8Array> {
  return async function* again() {
    yield* chunks;
  };
}
