import { TooManyRequests } from '../errors.js';
import type { Logger } from '../log.js';

export interface BulkheadOptions {
  /** Batches (and event actions: a resend, a test event) of one business being handled at once. */
  readonly maxInFlight: number;
  /** What a refused caller is told to wait. @default 1 */
  readonly retryAfterSeconds?: number;
}

/** One business's slots; `enter` takes one (or refuses with 429) and returns what gives it back. */
export interface Bulkhead {
  enter(businessId: string, log: Logger): () => void;
}

/**
 * A concurrency bulkhead per business: a business that sends many (or huge, or compressed) batches
 * at once holds at most `maxInFlight` slots, so the others keep theirs. Past that it is refused at
 * once (429), never queued: a queue would only move the storm into memory. The HTTP endpoints take a
 * slot before they decode a body, so decompression counts against it too.
 */
export function createBulkhead(options: BulkheadOptions): Bulkhead {
  const { maxInFlight, retryAfterSeconds = 1 } = options;
  const inFlight = new Map<string, number>();
  // draft-ietf-httpapi-ratelimit-headers-11 §3.1: a quota in concurrent requests.
  const policy = `"concurrency";q=${maxInFlight};qu="concurrent-requests"`;
  return {
    enter(businessId, log) {
      const running = inFlight.get(businessId) ?? 0;
      if (running >= maxInFlight) {
        log.info(
          { inFlight: running },
          'request refused: too many batches or event actions of this business in flight',
        );
        throw new TooManyRequests(
          `This business already has ${running} batch(es) or event action(s) being processed; at most ${maxInFlight} at once. Retry after the others are answered.`,
          retryAfterSeconds,
          { 'ratelimit-policy': policy, ratelimit: '"concurrency";r=0' },
        );
      }
      inFlight.set(businessId, running + 1);
      log.debug({ inFlight: running + 1 }, 'batch in flight');
      let left = false;
      return () => {
        if (left) return;
        left = true;
        const after = inFlight.get(businessId)! - 1;
        if (after === 0) inFlight.delete(businessId);
        else inFlight.set(businessId, after);
      };
    },
  };
}
