import { TooManyRequests } from '../errors.js';
import type { Ingest } from './batch.js';

export interface BulkheadOptions {
  /** Batches of one business being validated or published at once. */
  readonly maxInFlight: number;
  /** What a refused caller is told to wait. @default 1 */
  readonly retryAfterSeconds?: number;
}

/**
 * A concurrency bulkhead per business around the one `Ingest` flow: a business that sends many
 * (or huge) batches at once holds at most `maxInFlight` of the pipeline's slots, so the others
 * keep theirs. Past that it is refused at once (429), never queued: a queue would only move the
 * storm into memory. Any source (HTTP, file drops) can share one wrapped `Ingest`.
 */
export function withBulkhead(ingest: Ingest, options: BulkheadOptions): Ingest {
  const { maxInFlight, retryAfterSeconds = 1 } = options;
  const inFlight = new Map<string, number>();
  // draft-ietf-httpapi-ratelimit-headers-11 §3.1: a quota in concurrent requests.
  const policy = `"concurrency";q=${maxInFlight};qu="concurrent-requests"`;

  return async (batch) => {
    const running = inFlight.get(batch.businessId) ?? 0;
    if (running >= maxInFlight) {
      batch.log.info(
        { inFlight: running },
        'batch refused: too many batches of this business in flight',
      );
      throw new TooManyRequests(
        `This business already has ${running} batch(es) being processed; at most ${maxInFlight} at once. Retry after the others are answered.`,
        retryAfterSeconds,
        { 'ratelimit-policy': policy, ratelimit: '"concurrency";r=0' },
      );
    }
    inFlight.set(batch.businessId, running + 1);
    batch.log.debug({ inFlight: running + 1 }, 'batch in flight');
    try {
      return await ingest(batch);
    } finally {
      const left = inFlight.get(batch.businessId)! - 1;
      if (left === 0) inFlight.delete(batch.businessId);
      else inFlight.set(batch.businessId, left);
    }
  };
}
