import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * API keys are stored only as scrypt hashes in PHC string form:
 *   $scrypt$ln=15,r=8,p=1$<salt, base64>$<hash, base64>
 * scrypt is memory-hard, so a stolen config file does not give the keys away cheaply.
 */
export const API_KEY_HASH_PATTERN =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** What `hashApiKey` uses when given no cost (tests and older hashes: 32 MiB per check). */
const DEFAULT_COST = { ln: 15, r: 8, p: 1 };

/**
 * OWASP's current recommendation for scrypt (Password Storage Cheat Sheet: N=2^17, r=8, p=1):
 * what `hash-key` prints, and what an operator's password is hashed at again when it signs in
 * with a hash of a lower cost. 128 MiB and about 0.3 s of one core per check here.
 */
export const CURRENT_COST = { ln: 17, r: 8, p: 1 } as const;

export interface ScryptCost {
  readonly ln: number;
  readonly r: number;
  readonly p: number;
}

/** Whether `hash` was made at a lower cost than `CURRENT_COST` (a sign-in hashes it again). */
export function belowCurrentCost(hash: ScryptCost): boolean {
  return hash.ln < CURRENT_COST.ln || hash.r < CURRENT_COST.r;
}

/** `node:crypto`'s options for a cost (also what the password hasher's thread is sent). */
export function scryptCost({ ln, r, p }: ScryptCost): { N: number; r: number; p: number } {
  return { N: 2 ** ln, r, p };
}

/** A hash in PHC form, as `hash-key` prints it. */
export function formatHash(cost: ScryptCost, salt: Buffer, derived: Buffer): string {
  return `$scrypt$ln=${cost.ln},r=${cost.r},p=${cost.p}$${salt.toString('base64')}$${derived.toString('base64')}`;
}
const KEY_LENGTH = 32;

function scryptAsync(
  secret: string,
  salt: Buffer,
  keyLength: number,
  options: ScryptOptions,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, keyLength, options, (error, derived) =>
      error ? reject(error) : resolve(derived),
    );
  });
}

function scryptOptions(ln: number, r: number, p: number): ScryptOptions {
  // Node's default maxmem (32 MiB) is exactly what ln=15,r=8 needs, which it refuses; give headroom.
  return { N: 2 ** ln, r, p, maxmem: 256 * 2 ** ln * r };
}

export async function hashApiKey(apiKey: string, cost: ScryptCost = DEFAULT_COST): Promise<string> {
  const salt = randomBytes(16);
  const derived = await scryptAsync(
    apiKey,
    salt,
    KEY_LENGTH,
    scryptOptions(cost.ln, cost.r, cost.p),
  );
  return formatHash(cost, salt, derived);
}

export interface ParsedHash {
  ln: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

export function parseApiKeyHash(stored: string): ParsedHash | undefined {
  const match = API_KEY_HASH_PATTERN.exec(stored);
  if (!match) return undefined;
  const [, ln, r, p, salt, hash] = match;
  const parsed = {
    ln: Number(ln),
    r: Number(r),
    p: Number(p),
    salt: Buffer.from(salt!, 'base64'),
    hash: Buffer.from(hash!, 'base64'),
  };
  // Bounds keep a hostile or mistyped config from asking for gigabytes per login.
  if (
    parsed.ln < 10 ||
    parsed.ln > 20 ||
    parsed.r < 1 ||
    parsed.r > 16 ||
    parsed.p < 1 ||
    parsed.p > 4
  )
    return undefined;
  // Canonical base64 of a whole digest, as hash-key prints it: a hash cut short in copying (or
  // altered) would otherwise load, and its business would get 401 forever without a word.
  if (parsed.salt.length < 8 || parsed.hash.length !== KEY_LENGTH) return undefined;
  if (parsed.salt.toString('base64') !== salt || parsed.hash.toString('base64') !== hash)
    return undefined;
  return parsed;
}

/**
 * Whether two digests are equal, in time independent of where they differ (lengths are not
 * secret). Exported so a test can time it in isolation: scrypt's noise would hide a leak.
 */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && timingSafeEqual(a, b);
}

/** Constant-time check of a presented key against a stored hash. */
export async function verifyApiKey(apiKey: string, stored: ParsedHash): Promise<boolean> {
  const derived = await scryptAsync(
    apiKey,
    stored.salt,
    stored.hash.length,
    scryptOptions(stored.ln, stored.r, stored.p),
  );
  return digestsEqual(derived, stored.hash);
}

/** The key hashes a tenant accepts: one, or two during a rotation (`apiKeyHashes`). */
export function tenantKeyHashes(tenant: {
  readonly apiKeyHash?: string | undefined;
  readonly apiKeyHashes?: readonly string[] | undefined;
}): readonly string[] {
  return tenant.apiKeyHashes ?? (tenant.apiKeyHash === undefined ? [] : [tenant.apiKeyHash]);
}

/** The demo tenant's hash of the public key `demo-api-key` (config/development.yaml). */
export const DEMO_API_KEY_HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';
