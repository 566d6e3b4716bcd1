/**
 * Ids the service makes where the order of creation helps: a batch's and an attempt's row id in
 * the history, and a request's correlation id when the client sent none. UUIDv7 (RFC 9562): the
 * millisecond time first, then random bits. Rows written together get neighbouring keys, so each
 * history write adds to the right edge of a key index (the primary key, the correlation id's)
 * instead of touching a random page of it: with random (v4) keys the embedded store wrote twice
 * the pages per flush. Unique as v4 is for this use (74 random bits per millisecond); the order
 * within one millisecond is random.
 *
 * The random part is `randomUUID()`'s, which draws from a pool of random bytes filled in bulk: a
 * third of the CPU of filling 10 bytes per id (`randomFillSync`), on the path of every request.
 */
import { randomUUID } from 'node:crypto';

export function timeOrderedId(now = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // A v4 UUID's last 17 characters are random but for its variant bits, which v7 shares; the
  // characters before them become the time and the version.
  const random = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}
