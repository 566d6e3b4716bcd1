/**
 * Ids of the rows the history's writers make (a batch, an attempt): UUIDv7 (RFC 9562), the
 * millisecond time first, then random bits. Rows written together get neighbouring keys, so each
 * write adds to the right edge of the primary-key index instead of touching a random page of it:
 * with random (v4) keys the embedded store wrote twice the pages per flush. Unique as v4 is for
 * this use (74 random bits per millisecond); the order within one millisecond is random.
 */
import { randomFillSync } from 'node:crypto';

const bytes = Buffer.alloc(16);

export function timeOrderedId(now = Date.now()): string {
  randomFillSync(bytes, 6, 10);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
