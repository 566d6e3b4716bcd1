import { createHash } from 'node:crypto';
import type { WarehouseEvent } from '../event.js';

/**
 * How one attempt ended. `gone`: the endpoint answered 410 and wants nothing more. `rejected`:
 * the event itself cannot be sent to this destination (a header or name it cannot carry), so
 * trying again cannot help and the endpoint is not to blame: it is dead-lettered at once and
 * the endpoint's circuit does not count it. `aborted`: the receiver answered
 * `webhook-delivery: abort-message`: it wants no more attempts of this one event (its other
 * events go on), so it is dead-lettered at once.
 */
export type AttemptResult =
  | {
      readonly outcome: 'delivered';
      /** The HTTP status (webhooks). */
      readonly status?: number;
      /** Outbound files: `written`, or `existing` when the name was already there. */
      readonly file?: 'written' | 'existing';
      /** The start of the answer's body (webhooks), for the history. */
      readonly excerpt?: string;
    }
  | { readonly outcome: 'gone'; readonly status: 410; readonly excerpt?: string }
  | {
      readonly outcome: 'failed';
      readonly reason: string;
      readonly status?: number;
      readonly excerpt?: string;
      /** A 429 or 503's `Retry-After`, in ms: the next attempt waits at least this long. */
      readonly retryAfterMs?: number;
    }
  | {
      readonly outcome: 'aborted';
      readonly reason: string;
      readonly status: number;
      readonly excerpt?: string;
    }
  | { readonly outcome: 'rejected'; readonly reason: string };

/**
 * Where a business's events go: a webhook endpoint or a folder in the partner's own drop. The
 * engine (handle.ts) knows only this: which events it wants, and one attempt; its lane, retry
 * schedule, circuit and metrics are the same for every kind.
 */
export interface Destination {
  /** For logs and the table in index.ts. */
  readonly kind: 'webhook' | 'file';
  /** Stable across restarts and config reordering; carried in retry messages (no secret in it). */
  readonly id: string;
  /** How the history and an operator name it: a webhook's id or full URL, a folder's `file:<pipeline>`. */
  readonly name: string;
  readonly businessId: string;
  /** For logs and metrics: a webhook's host[:port], a folder's store and path; never a secret. */
  readonly host: string;
  /**
   * Where it delivers now, as a fingerprint (`targetOf`: a webhook's URL, a folder's store and
   * path, hashed — never the URL itself, which may hold a token). Retry copies carry it: a fix of
   * the URL starts the endpoint and its events afresh at the new one (state/endpoint.ts, retry.ts).
   */
  readonly target: string;
  readonly matches: (type: string) => boolean;
  /** One attempt; never throws for a failure of the destination (that is a `failed` result). */
  attempt(event: WarehouseEvent): Promise<AttemptResult>;
}

/** A destination's `target`: 16 characters of SHA-256 of where it delivers. */
export function targetOf(where: string): string {
  return createHash('sha256').update(where).digest('base64url').slice(0, 16);
}
