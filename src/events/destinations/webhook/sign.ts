import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (standardwebhooks.com): HMAC-SHA256 over `<id>.<timestamp>.<body>`
 * with the secret's bytes (base64 after `whsec_`), sent as `v1,<base64>`; several signatures
 * are space-separated, so during a rotation the receiver accepts either secret.
 */

/** The decoded secret. A class with a private field so that it never shows in a log or JSON dump. */
export class SigningKey {
  readonly #bytes: Buffer;
  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }
  sign(content: string): string {
    return createHmac('sha256', this.#bytes).update(content).digest('base64');
  }
  toJSON(): string {
    return '[secret]';
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'SigningKey [secret]';
  }
}

const SECRET_PATTERN = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** `whsec_<base64>` → key, or undefined when malformed or shorter than 24 bytes (192 bits). */
export function parseSecret(text: string): SigningKey | undefined {
  const match = SECRET_PATTERN.exec(text.trim());
  if (!match?.[1]) return undefined;
  const bytes = Buffer.from(match[1], 'base64');
  return bytes.length >= 24 ? new SigningKey(bytes) : undefined;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signatureHeaders(
  keys: readonly SigningKey[],
  id: string,
  timestampSeconds: number,
  body: string,
): SignedHeaders {
  const content = `${id}.${timestampSeconds}.${body}`;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': keys.map((key) => `v1,${key.sign(content)}`).join(' '),
  };
}
