import { randomUUID } from 'node:crypto';
import {
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  IdempotencyUnavailable,
  InvalidIdempotencyKey,
} from '../errors.js';
import { createMemoryState } from '../http-state/memory.js';
import type { KeyClaims, KeyRecord, MaybePromise, StoredAnswer } from '../http-state/state.js';

export type { StoredAnswer } from '../http-state/state.js';

/**
 * `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header-07): a retried POST with the
 * same key and the same request gets the first answer again instead of being processed twice.
 * Keys are scoped per business and kept `ttlSeconds` — in memory (bounded by entry count and by
 * the bytes of stored answers, least recently used forgotten first) or on Redis, where every
 * instance sees them (src/http-state/).
 */
export interface IdempotencyOptions {
  readonly ttlSeconds: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
  /**
   * How long a claim whose request is still running holds its key: past it (an instance that
   * died mid-request), the key is free again. @default ttlSeconds
   */
  readonly inFlightMs?: number;
  /** @default Date.now (memory store only) */
  readonly now?: () => number;
  /** Called for each request refused because the shared store did not answer its claim (a metric). */
  readonly onUnavailable?: () => void;
}

export type Claim =
  | { readonly replay: StoredAnswer }
  | {
      readonly replay?: undefined;
      /** Stores the answer, or (undefined) forgets the key so a retry runs again. */
      settle(answer: StoredAnswer | undefined): MaybePromise<void>;
    };

export interface IdempotencyStore {
  /**
   * Claims `key` for this request, or gives the stored answer; throws 409 (in flight), 422
   * (other request) or 503 (the shared store cannot be reached). Synchronous in memory.
   */
  claim(scope: string, key: string, fingerprint: string): MaybePromise<Claim>;
  /** Records held in this process's memory (0 on a shared store). */
  readonly size: number;
}

/** Over `claims` (a shared store), or in memory when none is given. */
export function createIdempotencyStore(
  options: IdempotencyOptions,
  claims?: KeyClaims,
): IdempotencyStore {
  const { ttlSeconds, maxBytes } = options;
  const ttlMs = ttlSeconds * 1000;
  const inFlightMs = Math.min(ttlMs, options.inFlightMs ?? ttlMs);
  const memory = claims
    ? undefined
    : createMemoryState({ maxEntries: options.maxEntries, maxBytes, now: options.now }).claims;
  const store = claims ?? memory!;

  const decide = (id: string, pending: KeyRecord, held: KeyRecord | undefined): Claim => {
    if (held) {
      if (held.fingerprint !== pending.fingerprint) {
        throw new IdempotencyKeyReused({
          detail:
            'This Idempotency-Key was used with a different request (endpoint or body). Use a new key for a new batch.',
        });
      }
      if (!held.answer)
        throw new IdempotencyKeyInUse({
          detail:
            'A request with this Idempotency-Key is still being processed. Retry after it is answered.',
          headers: { 'retry-after': '1' },
        });
      return { replay: held.answer };
    }
    return {
      settle(answer) {
        // An answer too large to keep is not kept: the key is forgotten and a retry runs again.
        const keep = answer && Buffer.byteLength(answer.body) <= maxBytes ? answer : undefined;
        const settled = keep && {
          fingerprint: pending.fingerprint,
          claimant: pending.claimant,
          answer: keep,
        };
        const done = store.settle(id, pending, settled, ttlMs);
        return done instanceof Promise ? done.catch(unavailable) : done;
      },
    };
  };

  return {
    get size() {
      return memory?.size ?? 0;
    },
    claim(scope, key, fingerprint) {
      const id = `idempotency:${scope}\u0000${key}`;
      const pending: KeyRecord = { fingerprint, claimant: randomUUID() };
      const held = store.claim(id, pending, inFlightMs);
      return held instanceof Promise
        ? held.then(
            (found) => decide(id, pending, found),
            (error: unknown) => {
              options.onUnavailable?.();
              return unavailable(error);
            },
          )
        : decide(id, pending, held);
    },
  };
}

function unavailable(error: unknown): never {
  throw new IdempotencyUnavailable({
    detail:
      'The Idempotency-Key store cannot be reached, so this request cannot be protected against being processed twice. Retry later.',
    cause: error,
  });
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
