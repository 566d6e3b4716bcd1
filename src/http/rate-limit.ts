/**
 * Per-business request rate limit: a token bucket per key, in memory. A bucket holds up to
 * `requests` tokens and refills at `requests / windowSeconds` per second, so a business may
 * burst its whole quota and then goes at the sustained rate; one business's storm empties
 * only its own bucket.
 *
 * Headers follow draft-ietf-httpapi-ratelimit-headers-11 (May 2026), structured-field form:
 *   RateLimit-Policy: "default";q=120;w=60   (quota q per window w seconds)
 *   RateLimit: "default";r=42;t=17           (r remaining now; t seconds until the bucket is full again)
 * For a token bucket, w is the time to refill from empty.
 */
export interface RateLimitOptions {
  /** Bucket size, and the number of tokens restored per window. */
  readonly requests: number;
  readonly windowSeconds: number;
  /** @default Date.now */
  readonly now?: () => number;
  /** Buckets kept at most; full buckets are dropped first (a full bucket is the same as none). @default 10000 */
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
  take(key: string): RateDecision;
  readonly policy: string;
  /** Buckets held (bounded by `maxKeys`). */
  readonly size: number;
}

export const POLICY_NAME = 'default';

export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const { requests, windowSeconds, now = Date.now, maxKeys = 10_000 } = options;
  const perMs = requests / (windowSeconds * 1000);
  const buckets = new Map<string, { tokens: number; at: number }>();

  function prune(at: number): void {
    for (const [key, bucket] of buckets) {
      if (bucket.tokens + (at - bucket.at) * perMs >= requests) buckets.delete(key);
    }
    // Still full of busy buckets (only possible in the sandbox, where any id is accepted): forget the oldest.
    while (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!);
  }

  return {
    policy: `"${POLICY_NAME}";q=${requests};w=${windowSeconds}`,
    get size() {
      return buckets.size;
    },
    take(key) {
      const at = now();
      let bucket = buckets.get(key);
      if (!bucket) {
        if (buckets.size >= maxKeys) prune(at);
        bucket = { tokens: requests, at };
        buckets.set(key, bucket);
      }
      bucket.tokens = Math.min(requests, bucket.tokens + (at - bucket.at) * perMs);
      bucket.at = at;
      const allowed = bucket.tokens >= 1;
      if (allowed) bucket.tokens -= 1;
      return {
        allowed,
        remaining: Math.floor(bucket.tokens),
        resetSeconds: Math.ceil((requests - bucket.tokens) / perMs / 1000),
        retryAfterSeconds: allowed ? 0 : Math.ceil((1 - bucket.tokens) / perMs / 1000),
      };
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
