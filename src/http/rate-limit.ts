/**
 * Per-business request rate limit: a token bucket per key, in memory or on a shared store. A bucket holds up to
 * `requests` tokens and refills at `requests / windowSeconds` per second, so a business may
 * burst its whole quota and then goes at the sustained rate; one business's storm empties
 * only its own bucket.
 *
 * Headers follow draft-ietf-httpapi-ratelimit-headers-11 (May 2026), structured-field form:
 *   RateLimit-Policy: "default";q=120;w=60   (quota q per window w seconds)
 *   RateLimit: "default";r=42;t=17           (r remaining now; t seconds until the bucket is full again)
 * For a token bucket, w is the time to refill from empty.
 */
import { createMemoryState } from '../http-state/memory.js';
import type { BucketTake, MaybePromise, TokenBuckets } from '../http-state/state.js';

export interface RateLimitOptions {
  /** Bucket size, and the number of tokens restored per window. */
  readonly requests: number;
  readonly windowSeconds: number;
  /** @default Date.now (memory buckets only) */
  readonly now?: () => number;
  /** Buckets kept in memory at most, least recently used forgotten first (a full bucket is the same as none). @default 10000 */
  readonly maxKeys?: number;
}

export interface RateDecision {
  readonly allowed: boolean;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** Seconds until the bucket is full again. */
  readonly resetSeconds: number;
  /** Seconds until one token is available (0 when allowed). */
  readonly retryAfterSeconds: number;
}

export interface RateLimiter {
  /** Synchronous with memory buckets; a Promise on a shared store. */
  take(key: string): MaybePromise<RateDecision>;
  readonly policy: string;
  /** Buckets held in this process's memory (0 on a shared store). */
  readonly size: number;
}

export const POLICY_NAME = 'default';

/** Over `buckets` (a shared store), or in memory when none is given. */
export function createRateLimiter(options: RateLimitOptions, buckets?: TokenBuckets): RateLimiter {
  const { requests, windowSeconds, now, maxKeys = 10_000 } = options;
  const windowMs = windowSeconds * 1000;
  const perMs = requests / windowMs;
  const memory = buckets ? undefined : createMemoryState({ maxKeys, now }).buckets;
  const store = buckets ?? memory!;
  const decision = ({ allowed, tokens }: BucketTake): RateDecision => ({
    allowed,
    remaining: Math.floor(tokens),
    resetSeconds: Math.ceil((requests - tokens) / perMs / 1000),
    retryAfterSeconds: allowed ? 0 : Math.ceil((1 - tokens) / perMs / 1000),
  });

  return {
    policy: `"${POLICY_NAME}";q=${requests};w=${windowSeconds}`,
    get size() {
      return memory?.size ?? 0;
    },
    take(key) {
      const taken = store.take(key, requests, windowMs);
      return taken instanceof Promise ? taken.then(decision) : decision(taken);
    },
  };
}

export function rateLimitHeaders(
  limiter: RateLimiter,
  decision: RateDecision,
): Record<string, string> {
  return {
    'ratelimit-policy': limiter.policy,
    ratelimit: `"${POLICY_NAME}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}
