/**
 * Failed-login throttling, so credentials cannot be guessed at will. Failures are counted per
 * business id first:
 * - per client (address and business id together): past `maxFailuresPerClient` failures in the
 *   window, unverified attempts for that business id from that address are refused (429) until
 *   the oldest failure ages out. A key guessed wrongly locks that business id from that address,
 *   never another: one misconfigured connector behind an integration platform's shared egress (a
 *   NAT) does not lock out its neighbours, however often it fails;
 * - per client address, the ceiling across business ids: once `maxBusinessIdsPerAddress`
 *   business ids have begun failing from it within the window, an unverified attempt from it for
 *   any other business id is refused (a spray across many ids), while the ids already failing keep
 *   their own per-client limit. `0` turns the ceiling off (the choice for an egress many tenants
 *   share, where a spray is then bounded only per id);
 * - per business id: once `failuresBeforeSlowdown` failures are in the window, each unverified
 *   attempt for that id waits `slowdownStepMs` × (failures − failuresBeforeSlowdown + 1), at most `maxSlowdownMs`.
 *   It only slows, never refuses: an attacker spreading guesses over many addresses must not
 *   be able to lock the real business out.
 * A credential already verified (in the authenticator's cache) passes them all, so the business
 * keeps working even from an address it shares with an attacker.
 * The failures are kept in memory, or on a shared store (src/http-state/) for several instances.
 */
import { createMemoryState } from '../http-state/memory.js';
import type { FailureLogs, MaybePromise, RecentFailures } from '../http-state/state.js';
import type { LoginRefusalReason } from '../metrics.js';

export interface AuthThrottleOptions {
  readonly windowSeconds: number;
  readonly maxFailuresPerClient: number;
  /** Business ids failing from one address at once before others are refused; 0: no ceiling. */
  readonly maxBusinessIdsPerAddress: number;
  readonly failuresBeforeSlowdown: number;
  readonly slowdownStepMs: number;
  readonly maxSlowdownMs: number;
  /** @default Date.now (memory logs only) */
  readonly now?: () => number;
  /** Clients, addresses and business ids each remembered at most, in memory, least recently failed forgotten first. @default 10000 */
  readonly maxKeys?: number;
}

export type { LoginRefusalReason };

export interface LoginRefusal {
  readonly reason: LoginRefusalReason;
  /** Seconds until the attempt may be made (the oldest failure that counts leaves the window). */
  readonly retryAfterSeconds: number;
}

export interface AuthThrottle {
  /** Why this address may not try this business id now, or undefined when it may. */
  refusal(address: string, businessId: string): MaybePromise<LoginRefusal | undefined>;
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
    maxBusinessIdsPerAddress,
    failuresBeforeSlowdown,
    slowdownStepMs,
    maxSlowdownMs,
    now,
    maxKeys = 10_000,
  } = options;
  const windowMs = windowSeconds * 1000;
  const ceiling = maxBusinessIdsPerAddress > 0;
  const steps = slowdownStepMs > 0 ? Math.ceil(maxSlowdownMs / slowdownStepMs) : 0;
  const memory = logs ? undefined : createMemoryState({ maxKeys: maxKeys * 3, now }).failures;
  const store = logs ?? memory!;
  // NUL cannot be in a business id (refused as malformed credentials) or an address.
  const client = (address: string, businessId: string) =>
    `login-failures:client:${address}\u0000${businessId}`;
  // One entry per business id that began failing from the address (not one per failure).
  const byAddress = (address: string) => `login-failures:address-ids:${address}`;
  const byBusiness = (businessId: string) => `login-failures:business:${businessId}`;
  // The newest `limit` entries are kept: a client may try again once the oldest of them leaves the window.
  const wait = ({ count, oldestAgeMs }: RecentFailures, limit: number) =>
    count < limit ? 0 : Math.max(1, Math.ceil((windowMs - oldestAgeMs) / 1000));
  const refusal = (ofClient: RecentFailures, ofAddress: RecentFailures | undefined) => {
    const forClient = wait(ofClient, maxFailuresPerClient);
    if (forClient > 0) return { reason: 'client', retryAfterSeconds: forClient } as const;
    // An id already failing from the address is under its own limit: the ceiling holds back new ones.
    const forAddress =
      ofAddress && ofClient.count === 0 ? wait(ofAddress, maxBusinessIdsPerAddress) : 0;
    if (forAddress > 0) return { reason: 'address', retryAfterSeconds: forAddress } as const;
    return undefined;
  };
  const slowdown = ({ count }: RecentFailures) => {
    // After N failures the next attempt waits one step, after N+1 two steps, and so on.
    const excess = count - failuresBeforeSlowdown + 1;
    return excess > 0 ? Math.min(maxSlowdownMs, excess * slowdownStepMs) : 0;
  };
  const record = (address: string, businessId: string, ofClient: RecentFailures) => {
    const added = [
      store.add(client(address, businessId), windowMs, maxFailuresPerClient),
      store.add(byBusiness(businessId), windowMs, failuresBeforeSlowdown + steps + 1),
    ];
    // Its first failure in the window: the id joins the ones failing from this address.
    if (ceiling && ofClient.count === 0)
      added.push(store.add(byAddress(address), windowMs, maxBusinessIdsPerAddress));
    if (added.some((a) => a instanceof Promise)) return Promise.all(added).then(() => undefined);
  };

  return {
    get size() {
      return memory?.size ?? 0;
    },
    refusal(address, businessId) {
      const ofClient = store.recent(client(address, businessId), windowMs);
      const ofAddress = ceiling ? store.recent(byAddress(address), windowMs) : undefined;
      if (ofClient instanceof Promise || ofAddress instanceof Promise)
        return Promise.all([ofClient, ofAddress]).then(([c, a]) => refusal(c, a));
      return refusal(ofClient, ofAddress);
    },
    slowdownMs(businessId) {
      const recent = store.recent(byBusiness(businessId), windowMs);
      return recent instanceof Promise ? recent.then(slowdown) : slowdown(recent);
    },
    recordFailure(address, businessId) {
      const ofClient = store.recent(client(address, businessId), windowMs);
      return ofClient instanceof Promise
        ? ofClient.then((c) => record(address, businessId, c))
        : record(address, businessId, ofClient);
    },
  };
}
