import type { FailureLogs, TokenBuckets } from '../http-state/state.js';

/**
 * What an operator's sign-in passes before any password is hashed (issue 38): limits an
 * attacker cannot turn into a lock-out of an operator whose password they do not know.
 *
 * - per client address: `perAddress` tries in `windowSeconds` (a token bucket), whatever the
 *   names — random names from one address are refused past it;
 * - per (name, address): `failuresPerName` wrong passwords in `windowSeconds` refuse that name
 *   from that address only — guessing `ops`'s password from elsewhere does not lock the real
 *   `ops` out, as five wrong tries for the name alone did;
 * - across all: `overall` tries in `windowSeconds` for every address together, so a flood from
 *   many addresses hashes at most that many passwords (taken last, only by a try the two
 *   above let through: one address's refused flood does not use up everyone's tries).
 *
 * Kept in the shared state (src/http-state/): on Redis every instance counts against the same
 * limits (per instance they would multiply with the fleet); while Redis is away each instance
 * counts alone, as the API's limits do.
 */
export interface SignInLimits {
  readonly perAddress: number;
  readonly failuresPerName: number;
  readonly overall: number;
  readonly windowSeconds: number;
}

/** The defaults (portal.signInLimits in the configuration documents them). */
export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = {
  perAddress: 10,
  failuresPerName: 5,
  overall: 60,
  windowSeconds: 60,
};

export type SignInRefusal = {
  readonly limit: 'address' | 'name' | 'overall';
  readonly retryAfterSeconds: number;
};

export interface SignInGate {
  /** Why this try may not be made now (it was counted if it may), or undefined. */
  admit(name: string, address: string): Promise<SignInRefusal | undefined>;
  /** A wrong password for `name` from `address`. */
  failed(name: string, address: string): Promise<void>;
}

export function createSignInGate(
  state: { readonly buckets: TokenBuckets; readonly failures: FailureLogs },
  limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS,
): SignInGate {
  const windowMs = limits.windowSeconds * 1000;
  // NUL is in no name (config: [A-Za-z0-9._@-]) and no address: the two parts cannot run together.
  const pair = (name: string, address: string) =>
    `portal-sign-in:failures:${name.slice(0, 64)}\u0000${address}`;
  /** Seconds until a bucket of `capacity` per window has a token again. */
  const refill = (capacity: number) => Math.max(1, Math.ceil(limits.windowSeconds / capacity));
  const take = async (key: string, capacity: number) =>
    (await state.buckets.take(key, capacity, windowMs)).allowed;

  return {
    async admit(name, address) {
      const failures = await state.failures.recent(pair(name, address), windowMs);
      if (failures.count >= limits.failuresPerName)
        return {
          limit: 'name',
          retryAfterSeconds: Math.max(1, Math.ceil((windowMs - failures.oldestAgeMs) / 1000)),
        };
      if (!(await take(`portal-sign-in:address:${address}`, limits.perAddress)))
        return { limit: 'address', retryAfterSeconds: refill(limits.perAddress) };
      if (!(await take('portal-sign-in:overall', limits.overall)))
        return { limit: 'overall', retryAfterSeconds: refill(limits.overall) };
      return undefined;
    },
    async failed(name, address) {
      await state.failures.add(pair(name, address), windowMs, limits.failuresPerName);
    },
  };
}
