import { DEMO_API_KEY_HASH, parseApiKeyHash, type ParsedHash, verifyApiKey } from '../api-keys.js';
import { createRateLimiter } from '../http/rate-limit.js';

/**
 * The operators' passwords, checked as API keys are (api-keys.ts): scrypt, compared in constant
 * time. A name nobody has is checked against a hash all the same, so how long a refusal takes
 * does not tell which names exist; and the answer never says which part was wrong.
 */
export interface OperatorCredential {
  readonly name: string;
  /** scrypt, PHC format, as `hash-key` prints it. */
  readonly passwordHash: string;
}

/** A sign-in's answer; a refusal says no more than why (the page shows nothing else). */
export type OperatorCheck = (
  name: string,
  password: string,
) => Promise<
  | { readonly ok: true; readonly name: string }
  | { readonly ok: false; readonly why: 'wrong' }
  /** Seconds until this name may try again (the answer's `Retry-After`). */
  | { readonly ok: false; readonly why: 'throttled'; readonly retryAfterSeconds: number }
>;

export interface OperatorCheckOptions {
  /**
   * Tries per operator name in `windowSeconds` (its bucket refills at that rate): enough for a
   * typo or two, far too few to guess a password. @default 5
   */
  readonly tries?: number;
  /** @default 60 */
  readonly windowSeconds?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Hashes the configuration has already checked (config/scrypt-hash.ts). */
function parsed(hash: string): ParsedHash {
  const result = parseApiKeyHash(hash);
  if (!result) throw new Error('portal.operators: a passwordHash is not a scrypt hash');
  return result;
}

export function createOperatorCheck(
  operators: readonly OperatorCredential[],
  options: OperatorCheckOptions = {},
): OperatorCheck {
  const hashes = new Map(operators.map((o) => [o.name, parsed(o.passwordHash)]));
  // Any valid hash will do: a password is never checked against it to sign anyone in.
  const decoy = parsed(DEMO_API_KEY_HASH);
  const limiter = createRateLimiter({
    requests: options.tries ?? 5,
    windowSeconds: options.windowSeconds ?? 60,
    ...(options.now && { now: options.now }),
  });
  return async (name, password) => {
    // Taken for every try, a success too: a guesser cannot tell which try refilled nothing.
    const decision = await limiter.take(`operator:${name.slice(0, 64)}`);
    if (!decision.allowed)
      return { ok: false, why: 'throttled', retryAfterSeconds: decision.retryAfterSeconds };
    const stored = hashes.get(name);
    const matches = await verifyApiKey(password, stored ?? decoy);
    return stored && matches ? { ok: true, name } : { ok: false, why: 'wrong' };
  };
}
