import { createHash } from 'node:crypto';

/**
 * Stable message ids, so that "at least once" never means "processed twice": the same record
 * (same business, kind and canonical bytes) gets the same id in a retried batch or a
 * reprocessed file, and consumers de-duplicate on it. Identical records inside one batch are
 * told apart by their occurrence number, so two messages of one batch never share an id.
 *
 * Format: a UUID (version 8, "custom"), the first 122 bits of a SHA-256.
 */
export class MessageIds {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly businessId: string,
    private readonly kind: string,
  ) {}

  next(body: Buffer): string {
    const hash = createHash('sha256').update(this.businessId).update('\0').update(this.kind).update('\0').update(body);
    const digest = hash.digest('hex');
    const occurrence = this.seen.get(digest) ?? 0;
    this.seen.set(digest, occurrence + 1);
    const hex =
      occurrence === 0
        ? digest
        : createHash('sha256').update(digest).update(`#${occurrence}`).digest('hex');
    return uuidV8(hex);
  }
}

function uuidV8(hex: string): string {
  // Version nibble 8, variant bits 10xx (RFC 9562).
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
