/**
 * The state the HTTP facade keeps between requests — `Idempotency-Key` records, rate-limit
 * buckets, failed-login logs — behind one small interface, so that several instances behind a
 * load balancer can share it (Redis) while one instance keeps it in its own memory (the default).
 *
 * The memory implementation answers synchronously: a request pays no extra `await` (no extra
 * turn of the event loop) unless a shared store is configured. Callers await only a Promise.
 */
export type MaybePromise<T> = T | Promise<T>;

/** An answer as replayed: status, media type and body, byte for byte, and the request it answered. */
export interface StoredAnswer {
  readonly status: number;
  /** The first request's correlation id: the one its body names, so the replay's header says the same. */
  readonly correlationId: string;
  readonly contentType: string;
  readonly body: string;
}

/** What an `Idempotency-Key` holds: the request it was first used for and, once answered, the answer. */
export interface KeyRecord {
  readonly fingerprint: string;
  /** Unique per claim, so that only the request holding the claim settles it. */
  readonly claimant: string;
  readonly answer?: StoredAnswer;
}

/** `Idempotency-Key` records. */
export interface KeyClaims {
  /**
   * Sets `id` to `pending` for `ttlMs` unless it holds something (Redis: one atomic script,
   * `GET` else `SET PX`); gives what it holds, or undefined when the claim is now `pending`'s.
   */
  claim(id: string, pending: KeyRecord, ttlMs: number): MaybePromise<KeyRecord | undefined>;
  /**
   * If `id` still holds `pending` (not expired, not evicted, not claimed anew), replaces it with
   * `settled` for `ttlMs`, or forgets it when `settled` is undefined (a retry runs again).
   */
  settle(
    id: string,
    pending: KeyRecord,
    settled: KeyRecord | undefined,
    ttlMs: number,
  ): MaybePromise<void>;
}

export interface BucketTake {
  readonly allowed: boolean;
  /** Tokens left after this take (fractional). */
  readonly tokens: number;
}

/**
 * Token buckets: each holds up to `capacity` tokens and refills `capacity` per `windowMs`. Keys
 * are the stores' own namespace (a business id, as is: no string built per request in memory).
 */
export interface TokenBuckets {
  /** Refills `key`'s bucket for the time elapsed, then takes one token if there is one. */
  take(key: string, capacity: number, windowMs: number): MaybePromise<BucketTake>;
}

export interface RecentFailures {
  readonly count: number;
  /** How long ago the oldest failure kept was recorded, in ms (0 when there is none). */
  readonly oldestAgeMs: number;
}

/** Failure times per key within a sliding window, the newest `cap` kept. */
export interface FailureLogs {
  recent(key: string, windowMs: number): MaybePromise<RecentFailures>;
  add(key: string, windowMs: number, cap: number): MaybePromise<void>;
}

/**
 * Short values by key, each expiring after its own time (the portal's sessions): kept where the
 * rest of the state is, so that on Redis every instance reads the same.
 */
export interface ValueStore {
  get(key: string): MaybePromise<string | undefined>;
  set(key: string, value: string, ttlMs: number): MaybePromise<void>;
  delete(key: string): MaybePromise<void>;
}

/** The facade's state, one per service. */
export interface SharedState {
  readonly kind: 'memory' | 'redis';
  /** The store answers now (memory: always; Redis: a connection is ready). */
  readonly reachable: boolean;
  /**
   * The store answered at least once since start-up (memory: always). Until it has, `/readyz`
   * answers 503: a wrong address or password keeps a new instance out of the load balancer
   * instead of serving with per-instance limits; an outage after that does not.
   */
  readonly reachedOnce: boolean;
  readonly claims: KeyClaims;
  readonly buckets: TokenBuckets;
  readonly failures: FailureLogs;
  readonly values: ValueStore;
  close(): Promise<void>;
}

/** The shared store cannot be reached (Redis down, a command timed out). */
export class SharedStateUnavailable extends Error {
  override readonly name = 'SharedStateUnavailable';
}
