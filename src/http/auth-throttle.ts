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
 */
export interface AuthThrottleOptions {
  readonly windowSeconds: number;
  readonly maxFailuresPerClient: number;
  readonly maxFailuresPerAddress: number;
  readonly failuresBeforeSlowdown: number;
  readonly slowdownStepMs: number;
  readonly maxSlowdownMs: number;
  /** @default Date.now */
  readonly now?: () => number;
  /** Addresses and business ids remembered at most, oldest forgotten first. @default 10000 */
  readonly maxKeys?: number;
}

export interface AuthThrottle {
  /** Seconds until this address may try this business id again, or 0 when it may now. */
  retryAfter(address: string, businessId: string): number;
  /** How long an unverified attempt for this business id is held back, in ms. */
  slowdownMs(businessId: string): number;
  recordFailure(address: string, businessId: string): void;
  /** Clients, addresses and business ids remembered (each bounded by `maxKeys`). */
  readonly size: { clients: number; addresses: number; businesses: number };
}

/** Failure times per key, oldest first, each list capped: bounded memory whatever is sent. */
class FailureLog {
  readonly times = new Map<string, number[]>();
  constructor(
    private readonly windowMs: number,
    private readonly cap: number,
    private readonly maxKeys: number,
  ) {}

  recent(key: string, now: number): number[] {
    const times = this.times.get(key);
    if (!times) return [];
    while (times.length > 0 && times[0]! <= now - this.windowMs) times.shift();
    if (times.length === 0) this.times.delete(key);
    return times;
  }

  add(key: string, now: number): void {
    const times = this.recent(key, now);
    this.times.delete(key); // re-inserted last: the Map's order is least recently failed first
    if (times.length >= this.cap) times.shift();
    times.push(now);
    this.times.set(key, times);
    while (this.times.size > this.maxKeys) this.times.delete(this.times.keys().next().value!);
  }
}

export function createAuthThrottle(options: AuthThrottleOptions): AuthThrottle {
  const {
    windowSeconds,
    maxFailuresPerClient,
    maxFailuresPerAddress,
    failuresBeforeSlowdown,
    slowdownStepMs,
    maxSlowdownMs,
    now = Date.now,
    maxKeys = 10_000,
  } = options;
  const windowMs = windowSeconds * 1000;
  const steps = slowdownStepMs > 0 ? Math.ceil(maxSlowdownMs / slowdownStepMs) : 0;
  const clients = new FailureLog(windowMs, maxFailuresPerClient, maxKeys);
  const addresses = new FailureLog(windowMs, maxFailuresPerAddress, maxKeys);
  // NUL cannot be in a business id (refused as malformed credentials) or an address.
  const client = (address: string, businessId: string) => `${address}\u0000${businessId}`;
  const wait = (times: number[], limit: number, at: number) =>
    times.length < limit ? 0 : Math.max(1, Math.ceil((times[0]! + windowMs - at) / 1000));
  const businesses = new FailureLog(windowMs, failuresBeforeSlowdown + steps + 1, maxKeys);

  return {
    get size() {
      return {
        clients: clients.times.size,
        addresses: addresses.times.size,
        businesses: businesses.times.size,
      };
    },
    retryAfter(address, businessId) {
      const at = now();
      return Math.max(
        wait(clients.recent(client(address, businessId), at), maxFailuresPerClient, at),
        wait(addresses.recent(address, at), maxFailuresPerAddress, at),
      );
    },
    slowdownMs(businessId) {
      // After N failures the next attempt waits one step, after N+1 two steps, and so on.
      const excess = businesses.recent(businessId, now()).length - failuresBeforeSlowdown + 1;
      return excess > 0 ? Math.min(maxSlowdownMs, excess * slowdownStepMs) : 0;
    },
    recordFailure(address, businessId) {
      const at = now();
      clients.add(client(address, businessId), at);
      addresses.add(address, at);
      businesses.add(businessId, at);
    },
  };
}
