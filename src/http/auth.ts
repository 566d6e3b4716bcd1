import { hash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import {
  hashApiKey,
  parseApiKeyHash,
  tenantKeyHashes,
  verifyApiKey,
  type ParsedHash,
} from '../api-keys.js';
import type { Tenant } from '../config.js';
import { Unauthorized } from '../errors.js';

/** Resolves an `Authorization` header to the business it acts for, or throws `Unauthorized`. */
export interface Authenticator {
  authenticate(authorization: string | null | undefined): Promise<string>;
  /** The business of a credential verified recently (no scrypt, no guessing: an exact match only). */
  known(authorization: string | null | undefined): string | undefined;
  /**
   * Replaces the tenants (a configuration reload): from now on only their keys are accepted, and
   * every credential verified before is checked again. Checks in flight finish against the keys
   * they started with, but their result is not remembered.
   */
  setTenants(tenants: readonly Tenant[]): void;
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
  let hashes = hashesOf(options.tenants);
  // Bumped by each reload: a check that began before it must not fill the new cache.
  let generation = 0;

  // Verified credentials, keyed by a SHA-256 of a per-process secret and the header: the cache
  // never holds a key, and a lookup's timing says nothing useful about one. A one-shot hash of
  // secret + header rather than an HMAC: an HMAC guards a digest that others see (length
  // extension), and these never leave the process; `createHmac` per request cost ~2.7 µs hot
  // (an Hmac object and a digest lookup each time), the one-shot ~0.5 µs.
  const pepper = randomBytes(32).toString('base64');
  const cacheKeyOf = (authorization: string) => hash('sha256', pepper + authorization, 'base64');
  // Bounded, least recently used forgotten first, each entry kept cacheTtlMs (checked on read).
  const verified = new LRUCache<string, string>({ max: cacheSize, ttl: cacheTtlMs });
  const checking = new Map<string, Promise<boolean>>();
  // An unknown business id still costs one scrypt, at the cost the tenants' keys are hashed at
  // (hash-key's changed: ln=15, then 17), so timing does not reveal which ids exist.
  let decoy: Promise<ParsedHash | undefined> | undefined;
  const decoyHash = async (): Promise<ParsedHash> => {
    const [cost] = [...hashes.values()].flat();
    decoy ??= hashApiKey(randomBytes(16).toString('hex'), cost).then(parseApiKeyHash);
    const made = await decoy;
    if (!made) throw new Error('the decoy hash could not be made');
    return made;
  };

  const cachedBusiness = (authorization: string): string | undefined => {
    return verified.get(cacheKeyOf(authorization));
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
    setTenants(tenants) {
      hashes = hashesOf(tenants);
      decoy = undefined; // made again at the new tenants' cost
      generation += 1;
      verified.clear();
      checking.clear();
    },
    async authenticate(authorization) {
      const { businessId, apiKey } = parseBasic(authorization);
      if (acceptAnyCredentials) return businessId;

      const cacheKey = cacheKeyOf(authorization!);
      const hit = verified.get(cacheKey);
      if (hit !== undefined) return hit;

      // Concurrent first requests with one credential share one scrypt run: each run takes
      // 32 MiB and a thread-pool slot, so a burst must not start one per request.
      const began = generation;
      let check = checking.get(cacheKey);
      if (!check) {
        const stored = hashes.get(businessId);
        check = (async () => {
          // Every hash is checked, always, and the results combined without a short cut: the
          // time taken says nothing about which key of a rotation matched.
          const results = await Promise.all(
            (stored ?? [await decoyHash()]).map((hash) => verify(apiKey, hash)),
          );
          return (
            results.reduce((found, matched) => found || matched, false) && stored !== undefined
          );
        })();
        const pending = check;
        checking.set(cacheKey, pending);
        void pending
          .finally(() => {
            if (checking.get(cacheKey) === pending) checking.delete(cacheKey);
          })
          .catch(() => undefined);
      }
      if (!(await check))
        throw new Unauthorized('The credentials are not recognised for this business.');
      if (began !== generation) return businessId; // accepted under the keys it was sent with; not remembered

      verified.set(cacheKey, businessId);
      return businessId;
    },
  };
}

function hashesOf(tenants: readonly Tenant[]): Map<string, readonly ParsedHash[]> {
  return new Map(
    tenants.map((tenant) => [
      tenant.businessId,
      tenantKeyHashes(tenant).map((hash) => parseApiKeyHash(hash)!),
    ]),
  );
}
