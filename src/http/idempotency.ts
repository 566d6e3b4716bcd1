import { IdempotencyKeyInUse, IdempotencyKeyReused, InvalidIdempotencyKey } from '../errors.js';

/**
 * `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header-07): a retried POST with the
 * same key and the same request gets the first answer again instead of being processed twice.
 * Keys are scoped per business, kept `ttlSeconds`, in memory, bounded by entry count and by the
 * bytes of stored answers (least recently used forgotten first).
 */
export interface IdempotencyOptions {
  readonly ttlSeconds: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** An answer as replayed: status, media type and body, byte for byte, and the request it answered. */
export interface StoredAnswer {
  readonly status: number;
  /** The first request's correlation id: the one its body names, so the replay's header says the same. */
  readonly correlationId: string;
  readonly contentType: string;
  readonly body: string;
}

type Entry =
  | { readonly fingerprint: string; readonly expires: number; readonly answer?: undefined }
  | {
      readonly fingerprint: string;
      readonly expires: number;
      readonly answer: StoredAnswer;
      readonly bytes: number;
    };

export type Claim =
  | { readonly replay: StoredAnswer }
  | {
      readonly replay?: undefined /** Stores the answer, or (undefined) forgets the key so a retry runs again. */;
      settle(answer: StoredAnswer | undefined): void;
    };

export interface IdempotencyStore {
  /** Claims `key` for this request, or gives the stored answer; throws 409 (in flight) or 422 (other request). */
  claim(scope: string, key: string, fingerprint: string): Claim;
  readonly size: number;
}

export function createIdempotencyStore(options: IdempotencyOptions): IdempotencyStore {
  const { ttlSeconds, maxEntries, maxBytes, now = Date.now } = options;
  const entries = new Map<string, Entry>();
  let bytes = 0;

  const forget = (id: string): void => {
    const entry = entries.get(id);
    if (entry?.answer) bytes -= entry.bytes;
    entries.delete(id);
  };
  const makeRoom = (): void => {
    const at = now();
    for (const [id, entry] of entries) if (entry.expires <= at) forget(id);
    for (const [id] of entries) {
      if (entries.size <= maxEntries && bytes <= maxBytes) break;
      forget(id);
    }
  };

  return {
    get size() {
      return entries.size;
    },
    claim(scope, key, fingerprint) {
      const id = `${scope}\u0000${key}`;
      const found = entries.get(id);
      if (found && found.expires <= now()) forget(id);
      const entry = entries.get(id);
      if (entry) {
        if (entry.fingerprint !== fingerprint) {
          throw new IdempotencyKeyReused({
            detail:
              'This Idempotency-Key was used with a different request (endpoint or body). Use a new key for a new batch.',
          });
        }
        if (!entry.answer)
          throw new IdempotencyKeyInUse({
            detail:
              'A request with this Idempotency-Key is still being processed. Retry after it is answered.',
            headers: { 'retry-after': '1' },
          });
        entries.delete(id); // most recently used last
        entries.set(id, entry);
        return { replay: entry.answer };
      }
      const expires = now() + ttlSeconds * 1000;
      const pending: Entry = { fingerprint, expires };
      entries.set(id, pending);
      makeRoom();
      return {
        settle(answer) {
          // Evicted meanwhile (memory bound): nothing to store, and a newer claim is not ours to touch.
          if (entries.get(id) !== pending) return;
          entries.delete(id);
          if (!answer) return;
          const size = Buffer.byteLength(answer.body) + id.length + fingerprint.length;
          if (size > maxBytes) return;
          entries.set(id, { fingerprint, expires, answer, bytes: size });
          bytes += size;
          makeRoom();
        },
      };
    },
  };
}

// sf-string (RFC 8941): printable ASCII in quotes, with \" and \\ escapes.
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
const BARE_TOKEN = /^[\x21-\x7e]+$/;

/**
 * The key from the header: the draft's sf-string form, or (leniently, as many clients send it)
 * a bare token of printable ASCII. 1-255 characters.
 */
export function parseIdempotencyKey(header: string | null): string | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  const quoted = SF_STRING.exec(text);
  const key = quoted
    ? quoted[1]!.replace(/\\(["\\])/g, '$1')
    : !text.startsWith('"') && BARE_TOKEN.test(text)
      ? text
      : undefined;
  if (key === undefined || key.length === 0 || key.length > 255) {
    throw new InvalidIdempotencyKey({
      detail:
        'Idempotency-Key must be 1-255 printable ASCII characters, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324".',
    });
  }
  return key;
}
