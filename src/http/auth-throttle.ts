/**
 * Failed-login throttling, so credentials cannot be guessed at will:
 * - per client (address and business id together): past `maxFailuresPerClient` failures in the
 *   window, unverified attempts for that business id from that address are refused (429) until
 *   the oldest failure ages out. Keyed by the pair, so one misconfigured connector behind an
 *   integration platform's shared egress (a NAT) does not lock out its neighbours;
 * - per client address: past `maxFailuresPerAddress` failures in the window (a higher ceiling,
 *   for guessing across many business ids), every unverified attempt from it is refused;
 * - per business id: once `failuresBeforeSlowdown` failures are in the window, each unverified
 *   attempt for that id waits `slowdownStepMs` × (failures − failuresBeforeSlowdown + 1), at most `maxSlowdownMs`.
 *   It only slows, never refuses: an attacker spreading guesses over many addresses must not
 *   be able to lock the real business out.
 * A credential already verified (in the authenticator's cache) passes both, so the business
 * keeps working even from an address it shares with an attacker.
 * The failures are kept in memory, or on a shared store (src/http-state/) for several instances.
 */
import { createMemoryState } from '../http-state/memory.js';
import type { FailureLogs, MaybePromise, RecentFailures } from '../http-state/state.js';

export interface AuthThrottleOptions {
  readonly windowSeconds: number;
  readonly maxFailuresPerClient: number;
  readonly maxFailuresPerAddress: number;
  readonly failuresBeforeSlowdown: number;
  readonly slowdownStepMs: number;
  readonly maxSlowdownMs: number;
  /** @default Date.now (memory logs only) */
  readonly now?: () => number;
  /** Clients, addresses and business ids each remembered at most, in memory, least recently failed forgotten first. @default 10000 */
  readonly maxKeys?: number;
}

export interface AuthThrottle {
  /** Seconds until this address may try this business id again, or 0 when it may now. */
  retryAfter(address: string, businessId: string): MaybePromise<number>;
  /** How long an unverified attempt for this business id is held back, in ms. */
  slowdownMs(businessId: string): MaybePromise<number>;
  recordFailure(address: string, businessId: string): MaybePromise<void>;
  /** Keys (clients, addresses, business ids together) held in this process's memory (0 on a shared store). */
  readonly size: number;
}

/** Over `logs` (a shared store), or in memory when none is given. */
export function createAuthThrottle(options: AuthThrottleOptions, logs?: FailureLogs): AuthThrottle {
  const {
    windowSeconds,
    maxFailuresPerClient,
    maxFailuresPerAddress,
    failuresBeforeSlowdown,
    slowdownStepMs,
    maxSlowdownMs,
    now,
    maxKeys = 10_000,
  } = options;
  const windowMs = windowSeconds * 1000;
  const steps = slowdownStepMs > 0 ? Math.ceil(maxSlowdownMs / slowdownStepMs) : 0;
  const memory = logs ? undefined : createMemoryState({ maxKeys: maxKeys * 3, now }).failures;
  const store = logs ?? memory!;
  // NUL cannot be in a business id (refused as malformed credentials) or an address.
  const client = (address: string, businessId: string) =>
    `login-failures:client:${address}\u0000${businessId}`;
  const byAddress = (address: string) => `login-failures:address:${address}`;
  const byBusiness = (businessId: string) => `login-failures:business:${businessId}`;
  // The newest `limit` failures are kept: a client may try again once the oldest of them leaves the window.
  const wait = ({ count, oldestAgeMs }: RecentFailures, limit: number) =>
    count < limit ? 0 : Math.max(1, Math.ceil((windowMs - oldestAgeMs) / 1000));
  const slowdown = ({ count }: RecentFailures) => {
    // After N failures the next attempt waits one step, after N+1 two steps, and so on.
    const excess = count - failuresBeforeSlowdown + 1;
    return excess > 0 ? Math.min(maxSlowdownMs, excess * slowdownStepMs) : 0;
  };

  return {
    get size() {
      return memory?.size ?? 0;
    },
    retryAfter(address, businessId) {
      const ofClient = store.recent(client(address, businessId), windowMs);
      const ofAddress = store.recent(byAddress(address), windowMs);
      if (ofClient instanceof Promise || ofAddress instanceof Promise)
        return Promise.all([ofClient, ofAddress]).then(([c, a]) =>
          Math.max(wait(c, maxFailuresPerClient), wait(a, maxFailuresPerAddress)),
        );
      return Math.max(wait(ofClient, maxFailuresPerClient), wait(ofAddress, maxFailuresPerAddress));
    },
    slowdownMs(businessId) {
      const recent = store.recent(byBusiness(businessId), windowMs);
      return recent instanceof Promise ? recent.then(slowdown) : slowdown(recent);
    },
    recordFailure(address, businessId) {
      const added = [
        store.add(client(address, businessId), windowMs, maxFailuresPerClient),
        store.add(byAddress(address), windowMs, maxFailuresPerAddress),
        store.add(byBusiness(businessId), windowMs, failuresBeforeSlowdown + steps + 1),
      ];
      if (added.some((a) => a instanceof Promise)) return Promise.all(added).then(() => undefined);
    },
  };
}
