import { createHash, hash } from 'node:crypto';

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
  /** What every hashed input starts with: the business and the kind, each ended by a NUL. */
  private readonly prefix: string;
  private readonly prefixBytes: Buffer;

  /**
   * @param volatilePaths fields that differ between two tries of the same input (a converted
   * record's time of receipt): left out of the hash so the id stays the same. `[]` = every item.
   * @param mayRepeat for a streamed batch, whose repeats were found beforehand (`RepeatFilter`):
   * only digests it names are counted, so unique records cost no memory. Default: count all.
   */
  constructor(
    businessId: string,
    kind: string,
    private readonly volatilePaths: readonly string[] = [],
    private readonly mayRepeat?: (hex: string) => boolean,
  ) {
    this.prefix = `${businessId}\0${kind}\0`;
    this.prefixBytes = Buffer.from(this.prefix);
  }

  /**
   * The SHA-256 that identifies a record whose published bytes are `body` (before occurrence
   * numbering); `body` may be its JSON text, when the bytes themselves are not needed.
   */
  digest(record: Record<string, unknown>, body: Buffer | string): Buffer {
    return this.hash(
      this.volatilePaths.length === 0
        ? body
        : JSON.stringify(withoutPaths(record, this.volatilePaths)),
    );
  }

  /** The id for a record whose published bytes are `body`. */
  forRecord(record: Record<string, unknown>, body: Buffer | string): string {
    return this.fromDigest(this.digest(record, body).toString('hex'));
  }

  /**
   * A record's bytes to publish, from its JSON `text`, and its id. Without volatile paths one
   * UTF-8 encoding serves both: the hashed input is the prefix and the bytes, and the body is the
   * view of it past the prefix (no second copy of each record for the hash).
   */
  encode(record: Record<string, unknown>, text: string): { body: Buffer; messageId: string } {
    if (this.volatilePaths.length > 0) {
      const body = Buffer.from(text);
      return { body, messageId: this.forRecord(record, body) };
    }
    const bytes = Buffer.from(this.prefix + text);
    return {
      body: bytes.subarray(this.prefixBytes.length),
      messageId: this.fromDigest(hash('sha256', bytes, 'hex')),
    };
  }

  /** The id for a record whose `digest` was taken earlier (a spooled record). */
  forDigest(digest: Buffer): string {
    return this.fromDigest(digest.toString('hex'));
  }

  /** The id for these exact bytes (no volatile paths left out). */
  next(body: Buffer): string {
    return this.fromDigest(this.hash(body).toString('hex'));
  }

  /**
   * SHA-256 of business, kind and bytes, NUL-separated. One-shot `hash()` rather than a
   * `createHash` chain: the same digest for about half the cost (no Hash object per record).
   */
  private hash(bytes: Buffer | string): Buffer {
    return typeof bytes === 'string'
      ? hash('sha256', this.prefix + bytes, 'buffer')
      : hash('sha256', Buffer.concat([this.prefixBytes, bytes]), 'buffer');
  }

  private fromDigest(digest: string): string {
    let occurrence = 0;
    if (!this.mayRepeat || this.mayRepeat(digest)) {
      occurrence = this.seen.get(digest) ?? 0;
      this.seen.set(digest, occurrence + 1);
    }
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

/**
 * A copy of `record` without the given paths, sharing everything off those paths (only the
 * objects along each path are copied), so the record itself is not changed.
 */
export function withoutPaths(
  record: Record<string, unknown>,
  paths: readonly string[],
): Record<string, unknown> {
  let out = record;
  for (const path of paths) out = drop(out, path.split('.')) as Record<string, unknown>;
  return out;
}

function drop(node: unknown, keys: readonly string[]): unknown {
  if (keys.length === 0) return node;
  const [first, ...rest] = keys as [string, ...string[]];
  const each = first.endsWith('[]');
  const key = each ? first.slice(0, -2) : first;
  if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, key))
    return node;
  const copy = { ...(node as Record<string, unknown>) };
  if (rest.length === 0 && !each) {
    delete copy[key];
  } else if (each) {
    const items = copy[key];
    if (Array.isArray(items)) copy[key] = items.map((item) => drop(item, rest));
  } else {
    copy[key] = drop(copy[key], rest);
  }
  return copy;
}
