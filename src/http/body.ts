import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { H3Event } from 'h3';
import {
  DecodersBusy,
  MalformedBody,
  PayloadTooLarge,
  RequestAborted,
  UnsupportedMediaType,
} from '../errors.js';

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

/** What srvx's Node adapter keeps of the Node objects behind a web request. */
type NodeRuntime = { runtime?: { node?: { req?: IncomingMessage; res?: ServerResponse } } };

/**
 * The body's chunks as received, cut off with 413 as soon as they pass `limit`. An honest
 * Content-Length over the limit is refused before a byte is read.
 */
function receivedChunks(event: H3Event, limit: number): Promise<Uint8Array[]> {
  const declared = event.req.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  const node = (event.req as NodeRuntime).runtime?.node;
  return node?.req ? readNodeBody(node.req, node.res, limit) : readWebBody(event.req.body, limit);
}

const tooLarge = (limit: number) =>
  new PayloadTooLarge({ detail: `The body exceeds the limit of ${limit} bytes.` });

/**
 * Over a real socket, Node's request stream is read with listeners: the web stream srvx would
 * wrap around it, and even Node's own async iterator with the generators around it, cost 6–8 µs
 * and a few KB of garbage a request (a quarter of a bare endpoint's whole cost). Past the limit the
 * rest is not read: the 413 goes out and closes the connection, so a client cannot make the service
 * read and discard an endless body.
 */
function readNodeBody(
  request: IncomingMessage,
  response: ServerResponse | undefined,
  limit: number,
): Promise<Buffer[]> {
  const aborted = (received: number, cause?: unknown) =>
    new RequestAborted({
      detail: `The connection closed after ${received} bytes of the body.`,
      cause,
    });
  if (request.readableEnded) return Promise.resolve([]);
  if (request.destroyed) return Promise.reject(aborted(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const settle = (error?: Error) => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
      if (error) reject(error);
      else resolve(chunks);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.byteLength;
      if (received <= limit) {
        chunks.push(chunk);
        return;
      }
      request.pause();
      if (response) response.shouldKeepAlive = false;
      settle(tooLarge(limit));
    };
    const onEnd = () => settle();
    const onError = (error: NodeJS.ErrnoException) =>
      settle(error.code === 'ECONNRESET' ? aborted(received, error) : error);
    // Closed before its end without an error (a client gone mid-body): aborted, not a hang.
    const onClose = () => settle(aborted(received));
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
    request.once('close', onClose);
  });
}

/** A body that is a web stream (the app called without a Node server, as in tests). */
async function readWebBody(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  if (!stream) return chunks;
  let size = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return chunks;
      size += value.byteLength;
      if (size > limit) throw tooLarge(limit);
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

type Coding = 'gzip' | 'deflate' | 'br';
type Decoder = (input: Buffer, options: zlib.ZlibOptions & zlib.BrotliOptions) => Promise<Buffer>;

/** Decoded on the thread pool, never on the event loop; `maxOutputLength` stops a bomb early. */
const DECODERS: Record<Coding, Decoder> = {
  gzip: promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

/**
 * The body's `Content-Encoding` codings, in the order they were applied; 415 for one this
 * service does not decode (RFC 9110 §15.5.16) rather than reading compressed bytes as JSON.
 */
export function contentCodings(event: H3Event): Coding[] {
  const header = event.req.headers.get('content-encoding');
  if (header === null) return [];
  const codings: Coding[] = [];
  for (const token of header.split(',')) {
    const coding = token.trim().toLowerCase();
    if (coding === '' || coding === 'identity') continue;
    if (coding === 'gzip' || coding === 'x-gzip') codings.push('gzip');
    else if (coding === 'deflate' || coding === 'br') codings.push(coding);
    else {
      throw new UnsupportedMediaType({
        detail: `Content-Encoding "${coding.slice(0, 40)}" is not supported; send the body as is, or with gzip, deflate or br.`,
        headers: { 'accept-encoding': 'gzip, deflate, br' },
      });
    }
  }
  if (codings.length > 2) {
    throw new UnsupportedMediaType({ detail: 'At most two content codings are decoded.' });
  }
  return codings;
}

/**
 * The decoders of the whole process. One decode may hold up to `limit` bytes of output (twice while
 * zlib joins it), and brotli's window besides; 120 concurrent 113-byte brotli bombs took 1.7 GB.
 * Their number is bounded instead: one more is refused at once (503), not queued, as the bulkhead does.
 */
export interface DecodeGate {
  /** Takes a decoder (or throws DecodersBusy) and returns what gives it back. */
  enter(): () => void;
}

export function createDecodeGate(max: number): DecodeGate {
  let busy = 0;
  return {
    enter() {
      if (busy >= max) throw new DecodersBusy(max);
      busy++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        busy--;
      };
    },
  };
}

/**
 * The body's chunks (no copy into one buffer when it came as is). A compressed body is decoded,
 * by one of `gate`'s decoders, and the limit holds for the bytes received and again for the
 * decoded bytes: a small body that inflates past it is a 413, a body that is not what its
 * Content-Encoding says is a 400.
 */
export async function bodyChunks(
  event: H3Event,
  limit: number,
  gate: DecodeGate,
): Promise<Uint8Array[]> {
  const codings = contentCodings(event);
  const chunks = await receivedChunks(event, limit);
  if (codings.length === 0) return chunks;
  const leave = gate.enter();
  try {
    return [await decode(joinChunks(chunks), codings, limit)];
  } finally {
    leave();
  }
}

async function decode(input: Buffer, codings: readonly Coding[], limit: number): Promise<Buffer> {
  let body = input;
  for (const coding of codings.toReversed()) {
    try {
      body = await DECODERS[coding](body, { maxOutputLength: limit });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new PayloadTooLarge({
          detail: `The body decoded from ${coding} exceeds the limit of ${limit} bytes.`,
        });
      }
      throw new MalformedBody({
        detail: `The body is not valid ${coding} data, as its Content-Encoding says it is.`,
      });
    }
  }
  return body;
}

/** The chunks as one buffer; no copy when there is one chunk. */
export function joinChunks(chunks: readonly Uint8Array[]): Buffer {
  return chunks.length === 1
    ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength)
    : Buffer.concat(chunks);
}

/** Reads the same chunks again on every call. */
export function replay(chunks: readonly Uint8Array[]): () => AsyncIterable<Uint8Array> {
  return async function* again() {
    yield* chunks;
  };
}
