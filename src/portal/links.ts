import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Sign-in links for the partner portal: a business opens its portal without an API key (spec
 * §5.6 keeps keys out of browsers). A link's token is `base64url(JSON {b, exp, n}).signature`,
 * where the signature is HMAC-SHA256 over the first part with the portal secret: the service
 * needs no list of the links it gave out, and a link names its business, its expiry and a
 * random nonce that the sign-in claims once (routes.ts), so a link signs in at most once.
 *
 * Pure functions of the secret and the clock, so they are tested alone (test/portal/links.test.ts).
 */

/** What a verified link says. */
export interface LinkClaims {
  readonly businessId: string;
  /** Expiry, ms since the epoch. */
  readonly exp: number;
  /** Random, unique per link: what the sign-in claims once. */
  readonly nonce: string;
}

/** Why a token is refused: `malformed` (not a token at all), `tampered` (wrong signature), `expired`. */
export type LinkRefusal = 'malformed' | 'tampered' | 'expired';

export type LinkCheck =
  | { readonly ok: true; readonly claims: LinkClaims }
  | { readonly ok: false; readonly reason: LinkRefusal };

/** Tokens longer than this are not read at all: a business id is at most 128 characters. */
const MAX_TOKEN_CHARS = 1024;

function signature(secret: Buffer, payload: string): Buffer {
  return createHmac('sha256', secret).update(`portal-link.${payload}`).digest();
}

/** A token for `businessId`, valid until `exp` (ms since the epoch). */
export function signLink(
  secret: Buffer,
  businessId: string,
  exp: number,
  nonce: string = randomBytes(16).toString('base64url'),
): string {
  const payload = Buffer.from(JSON.stringify({ b: businessId, exp, n: nonce })).toString(
    'base64url',
  );
  return `${payload}.${signature(secret, payload).toString('base64url')}`;
}

/**
 * Checks a token: its signature first, in constant time (timingSafeEqual), and only then what it
 * says — so nothing an attacker wrote is parsed before it is known to be ours.
 */
export function verifyLink(secret: Buffer, token: string, now: number = Date.now()): LinkCheck {
  if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token))
    return { ok: false, reason: 'malformed' };
  const [payload = '', signed = ''] = token.split('.');
  const given = Buffer.from(signed, 'base64url');
  const expected = signature(secret, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'tampered' };
  const claims = readClaims(payload);
  if (!claims) return { ok: false, reason: 'malformed' };
  if (claims.exp <= now) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}

function readClaims(payload: string): LinkClaims | undefined {
  try {
    const value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const { b, exp, n } = value as Record<string, unknown>;
    if (typeof b !== 'string' || typeof exp !== 'number' || typeof n !== 'string') return undefined;
    return { businessId: b, exp, nonce: n };
  } catch {
    return undefined;
  }
}

/** The URL a business opens: `<base>/portal/login?token=…` (base: the service's public URL). */
export function linkUrl(base: string, token: string): string {
  const url = new URL('portal/login', base.endsWith('/') ? base : `${base}/`);
  url.searchParams.set('token', token);
  return url.href;
}
