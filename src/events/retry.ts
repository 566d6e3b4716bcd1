/**
 * Retries live on the broker, not in a worker's memory, so they survive restarts and any worker
 * may make the next attempt. For each distinct delay of the schedule there is a durable queue
 * `<queue>.retry.<delay>ms` with that `x-message-ttl`, dead-lettering into the default exchange
 * with the delivery queue's name: a message parked there comes back to the delivery queue when
 * its delay is up. The delay is in the name, so changing the schedule declares new queues
 * instead of clashing with the old ones' arguments (old ones drain; delete one only once it is empty).
 */

/** Attempts already made for the endpoint named in {@link ENDPOINT_HEADER}; absent = 0. */
export const ATTEMPTS_HEADER = 'x-webhook-attempts';
/** Set on a parked message: only this endpoint (`Endpoint.id`) is tried again. */
export const ENDPOINT_HEADER = 'x-webhook-endpoint';
/**
 * Where the attempts counted in {@link ATTEMPTS_HEADER} were made (`Destination.target`, a
 * fingerprint, never the URL): a copy whose endpoint has moved since starts its schedule afresh.
 */
export const TARGET_HEADER = 'x-webhook-target';
/** Why the last attempt failed (no URL, no secret). */
export const LAST_FAILURE_HEADER = 'x-webhook-last-failure';
/** On a dead letter: why it was given up (a `DeadReason`, vocabulary.ts). */
export const DEAD_REASON_HEADER = 'x-dead-reason';
export const DEAD_AT_HEADER = 'x-dead-at';
/** On a parked message: when it comes back to the delivery queue (ISO 8601), for `events status`. */
export const NEXT_ATTEMPT_HEADER = 'x-webhook-next-attempt-at';

/** A dead letter as its headers above describe it (the CLI lists them, the portal shows them). */
export interface DeadLetter {
  readonly id: string;
  readonly type: string;
  readonly businessId: string;
  /** The endpoint it was for (its id). */
  readonly endpoint: string;
  /** Why it was dead-lettered (`attempts-exhausted`, `endpoint-removed`, …). */
  readonly reason: string;
  /** When, as the worker wrote it (ISO 8601). */
  readonly deadAt: string;
  readonly attempts: number;
  readonly lastFailure: string;
}

/**
 * A retry queue's name. With quorum queues the retry queues are quorum too (replicated: a node
 * loss must not stop parking), under names of their own — `….quorum` — because RabbitMQ cannot
 * turn the classic retry queues of earlier versions into quorum ones; those empty themselves into
 * the delivery queue as their messages' delays run out.
 */
export const retryQueueName = (queue: string, delayMs: number, type: 'quorum' | 'classic') =>
  `${queue}.retry.${delayMs}ms${type === 'quorum' ? '.quorum' : ''}`;
export const deadQueueName = (queue: string) => `${queue}.dead`;

/** The delays that need a retry queue: every entry after the first (the first attempt is on arrival). */
export function retryDelays(schedule: readonly number[], deferMs: number): number[] {
  return [...new Set([...schedule.slice(1), deferMs])].sort((a, b) => a - b);
}

/**
 * A busy endpoint's surplus is parked for this long without counting an attempt: long enough
 * not to spin through the broker, short enough to catch up soon after the endpoint recovers.
 */
export function deferDelay(timeoutMs: number): number {
  return Math.min(5000, timeoutMs);
}

export type NextStep =
  | { readonly action: 'retry'; readonly delayMs: number; readonly attempt: number }
  | { readonly action: 'dead' };

/**
 * After `attemptsMade` failed attempts: wait `schedule[attemptsMade]`, or give up when none is left.
 * A receiver's `Retry-After` (`retryAfterMs`) makes the wait at least that long — on one of the
 * retry queues that exist (`delays`, one per distinct delay: never a queue per value a receiver
 * sends), the smallest that is long enough, capped by the schedule's longest step so a receiver
 * cannot park an event for longer than the operator allows. It still counts as an attempt.
 */
export function afterFailure(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterMs?: number,
  delays: readonly number[] = schedule.slice(1),
): NextStep {
  const scheduled = schedule[attemptsMade];
  if (scheduled === undefined) return { action: 'dead' };
  const attempt = attemptsMade + 1;
  if (retryAfterMs === undefined || retryAfterMs <= scheduled)
    return { action: 'retry', delayMs: scheduled, attempt };
  const longest = Math.max(...schedule.slice(1), scheduled);
  const usable = delays.filter((delay) => delay >= scheduled && delay <= longest);
  const enough = usable.filter((delay) => delay >= retryAfterMs);
  const delayMs = enough.length > 0 ? Math.min(...enough) : Math.max(scheduled, ...usable);
  return { action: 'retry', delayMs, attempt };
}

export function attemptsOf(headers: Record<string, unknown> | undefined): number {
  const value = Number(headers?.[ATTEMPTS_HEADER] ?? 0);
  return Number.isInteger(value) && value >= 0 ? value : 0;
}

/**
 * Attempts already made at the endpoint where it delivers now (`target`): none when the copy was
 * parked while the endpoint had another URL — a fixed URL gets the event's whole schedule, so its
 * last attempt is never spent without the new URL being tried. A copy from before the header
 * (no target in it) keeps its count.
 */
export function attemptsAt(headers: Record<string, unknown> | undefined, target: string): number {
  const where = headers?.[TARGET_HEADER];
  if (typeof where === 'string' && where !== target) return 0;
  return attemptsOf(headers);
}
