import { LRUCache } from 'lru-cache';
import type {
  BucketTake,
  FailureLogs,
  KeyClaims,
  KeyRecord,
  RecentFailures,
  SharedState,
  TokenBuckets,
  ValueStore,
} from './state.js';

/**
 * The embedded default: the state in this process's memory, bounded (least recently used
 * forgotten first, in O(1) per new key: lru-cache, no scan). With several instances, each keeps
 * its own — see docs/operations-instances.md. Every method answers synchronously.
 */
export interface MemoryStateOptions {
  /** `Idempotency-Key` records kept at most. @default 10000 */
  readonly maxEntries?: number;
  /** Bytes of stored answers (plus ids and fingerprints) kept at most. @default 64 MiB */
  readonly maxBytes?: number;
  /** Rate-limit buckets, failed-login logs and values, kept at most (each). @default 10000 */
  readonly maxKeys?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** The same interfaces, answered synchronously, with the number of keys held. */
export interface MemoryKeyClaims extends KeyClaims {
  claim(id: string, pending: KeyRecord, ttlMs: number): KeyRecord | undefined;
  readonly size: number;
}
export interface MemoryTokenBuckets extends TokenBuckets {
  take(key: string, capacity: number, windowMs: number): BucketTake;
  readonly size: number;
}
export interface MemoryFailureLogs extends FailureLogs {
  recent(key: string, windowMs: number): RecentFailures;
  add(key: string, windowMs: number, cap: number): void;
  readonly size: number;
}

export interface MemoryValueStore extends ValueStore {
  get(key: string): string | undefined;
  set(key: string, value: string, ttlMs: number): void;
  delete(key: string): void;
}

export interface MemoryState extends SharedState {
  readonly kind: 'memory';
  readonly claims: MemoryKeyClaims;
  readonly buckets: MemoryTokenBuckets;
  readonly failures: MemoryFailureLogs;
  readonly values: MemoryValueStore;
}

export function createMemoryState(options: MemoryStateOptions = {}): MemoryState {
  const now = options.now ?? Date.now;
  return {
    kind: 'memory',
    reachable: true,
    reachedOnce: true,
    claims: memoryClaims(options.maxEntries ?? 10_000, options.maxBytes ?? 64 * 1024 * 1024, now),
    buckets: memoryBuckets(options.maxKeys ?? 10_000, now),
    failures: memoryFailures(options.maxKeys ?? 10_000, now),
    values: memoryValues(options.maxKeys ?? 10_000, now),
    close: async () => undefined,
  };
}

interface HeldRecord {
  readonly record: KeyRecord;
  readonly expires: number;
}

function memoryClaims(maxEntries: number, maxBytes: number, now: () => number): MemoryKeyClaims {
  // Expiry is checked on read (exact to the millisecond); an expired record still held only
  // waits to be the least recently used. A record larger than maxBytes is not kept at all.
  const held = new LRUCache<string, HeldRecord>({
    max: maxEntries,
    maxSize: maxBytes,
    sizeCalculation: ({ record }, id) =>
      id.length +
      record.fingerprint.length +
      (record.answer ? Buffer.byteLength(record.answer.body) : 0),
  });
  return {
    get size() {
      return held.size;
    },
    claim(id, pending, ttlMs) {
      const found = held.get(id);
      if (found && found.expires > now()) return found.record;
      held.set(id, { record: pending, expires: now() + ttlMs });
      return undefined;
    },
    settle(id, pending, settled, ttlMs) {
      // Evicted or expired meanwhile: nothing to store, and a newer claim is not ours to touch.
      if (held.peek(id)?.record !== pending) return;
      if (settled) held.set(id, { record: settled, expires: now() + ttlMs });
      else held.delete(id);
    },
  };
}

interface Bucket {
  tokens: number;
  at: number;
}

function memoryBuckets(maxKeys: number, now: () => number): MemoryTokenBuckets {
  // A bucket refilled to full is the same as none: least recently used forgotten first.
  const buckets = new LRUCache<string, Bucket>({ max: maxKeys });
  return {
    get size() {
      return buckets.size;
    },
    take(key, capacity, windowMs): BucketTake {
      const at = now();
      const perMs = capacity / windowMs;
      let bucket = buckets.get(key);
      if (!bucket) {
        bucket = { tokens: capacity, at };
        buckets.set(key, bucket);
      }
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, at - bucket.at) * perMs);
      bucket.at = at;
      const allowed = bucket.tokens >= 1;
      if (allowed) bucket.tokens -= 1;
      return { allowed, tokens: bucket.tokens };
    },
  };
}

function memoryFailures(maxKeys: number, now: () => number): MemoryFailureLogs {
  // Failure times per key, oldest first; the order of keys is least recently failed first.
  const logs = new LRUCache<string, number[]>({ max: maxKeys });
  const recent = (key: string, windowMs: number, at: number): number[] => {
    const times = logs.peek(key);
    if (!times) return [];
    while (times.length > 0 && times[0]! <= at - windowMs) times.shift();
    if (times.length === 0) logs.delete(key);
    return times;
  };
  return {
    get size() {
      return logs.size;
    },
    recent(key, windowMs): RecentFailures {
      const at = now();
      const times = recent(key, windowMs, at);
      return { count: times.length, oldestAgeMs: times.length > 0 ? at - times[0]! : 0 };
    },
    add(key, windowMs, cap) {
      const at = now();
      const times = recent(key, windowMs, at);
      if (times.length >= cap) times.shift();
      times.push(at);
      logs.set(key, times); // most recently failed last
    },
  };
}

function memoryValues(maxKeys: number, now: () => number): MemoryValueStore {
  const held = new LRUCache<string, { readonly value: string; readonly expires: number }>({
    max: maxKeys,
  });
  return {
    get(key) {
      const found = held.get(key);
      if (!found || found.expires > now()) return found?.value;
      held.delete(key);
      return undefined;
    },
    set(key, value, ttlMs) {
      held.set(key, { value, expires: now() + ttlMs });
    },
    delete(key) {
      held.delete(key);
    },
  };
}
