import { createHmac, randomBytes } from 'node:crypto';
import { hashApiKey, parseApiKeyHash, verifyApiKey, type ParsedHash } from '../api-keys.js';
import type { Tenant } from '../config.js';
import { Unauthorized } from '../errors.js';

/** Resolves an `Authorization` header to the business it acts for, or throws `Unauthorized`. */
export interface Authenticator {
  authenticate(authorization: string | null | undefined): Promise<string>;
  /** The business of a credential verified recently (no scrypt, no guessing: an exact match only). */
  known(authorization: string | null | undefined): string | undefined;
}

export interface AuthenticatorOptions {
  tenants: readonly Tenant[];
  /** Sandbox (spec §1) accepts every well-formed credential; the user-id acts as the business id. */
  acceptAnyCredentials: boolean;
  /** How long a verified credential is remembered, so scrypt runs once per key, not per request. @default 300000 */
  cacheTtlMs?: number;
  /** @default 10000 */
  cacheSize?: number;
  /** The key check; tests count calls through it. @default verifyApiKey (scrypt) */
  verify?: typeof verifyApiKey;
}

const BASIC = /^basic +([A-Za-z0-9+/]+={0,2}) *$/i;
const MAX_HEADER = 1024;

export function parseBasic(authorization: string | null | undefined): {
  businessId: string;
  apiKey: string;
} {
  if (!authorization)
    throw new Unauthorized(
      'Send HTTP Basic credentials: businessId as user-id, API key as password.',
    );
  const match = authorization.length <= MAX_HEADER ? BASIC.exec(authorization) : null;
  if (!match)
    throw new Unauthorized('The Authorization header is not well-formed HTTP Basic credentials.');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (colon <= 0 || colon === decoded.length - 1 || /[\u0000-\u001f\u007f\ufffd]/.test(decoded)) {
    throw new Unauthorized('The Authorization header is not well-formed HTTP Basic credentials.');
  }
  return { businessId: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const {
    acceptAnyCredentials,
    cacheTtlMs = 300_000,
    cacheSize = 10_000,
    verify = verifyApiKey,
  } = options;
  const hashes = new Map<string, ParsedHash>();
  for (const tenant of options.tenants)
    hashes.set(tenant.businessId, parseApiKeyHash(tenant.apiKeyHash)!);

  // Verified credentials, keyed by an HMAC under a per-process secret: the cache never holds
  // a key, and a lookup's timing says nothing useful about one.
  const pepper = randomBytes(32);
  const verified = new Map<string, { businessId: string; expires: number }>();
  const checking = new Map<string, Promise<boolean>>();
  // An unknown business id still costs one scrypt, so timing does not reveal which ids exist.
  let decoy: Promise<ParsedHash> | undefined;
  const decoyHash = () =>
    (decoy ??= hashApiKey(randomBytes(16).toString('hex')).then((h) => parseApiKeyHash(h)!));

  const cachedBusiness = (authorization: string): string | undefined => {
    const hit = verified.get(createHmac('sha256', pepper).update(authorization).digest('base64'));
    return hit && hit.expires > Date.now() ? hit.businessId : undefined;
  };

  return {
    known(authorization) {
      if (!authorization) return undefined;
      if (acceptAnyCredentials) {
        try {
          return parseBasic(authorization).businessId;
        } catch {
          return undefined;
        }
      }
      return cachedBusiness(authorization);
    },
    async authenticate(authorization) {
      const { businessId, apiKey } = parseBasic(authorization);
      if (acceptAnyCredentials) return businessId;

      const cacheKey = createHmac('sha256', pepper).update(authorization!).digest('base64');
      const hit = verified.get(cacheKey);
      if (hit && hit.expires > Date.now()) return hit.businessId;

      // Concurrent first requests with one credential share one scrypt run: each run takes
      // 32 MiB and a thread-pool slot, so a burst must not start one per request.
      let check = checking.get(cacheKey);
      if (!check) {
        const stored = hashes.get(businessId);
        check = (async () =>
          (await verify(apiKey, stored ?? (await decoyHash()))) && stored !== undefined)();
        checking.set(cacheKey, check);
        void check.finally(() => checking.delete(cacheKey)).catch(() => undefined);
      }
      if (!(await check))
        throw new Unauthorized('The credentials are not recognised for this business.');

      verified.delete(cacheKey);
      if (verified.size >= cacheSize) verified.delete(verified.keys().next().value!);
      verified.set(cacheKey, { businessId, expires: Date.now() + cacheTtlMs });
      return businessId;
    },
  };
}
