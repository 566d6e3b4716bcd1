import type { H3Event } from 'h3';
import { TooManyRequests, Unauthorized } from '../errors.js';
import type { Bulkhead } from '../ingest/bulkhead.js';
import type { Authenticator } from './auth.js';
import { parseBasic } from './auth.js';
import type { AuthThrottle, LoginRefusalReason } from './auth-throttle.js';
import { rateLimitHeaders, type RateLimiter } from './rate-limit.js';
import type { RequestContext } from './respond.js';

/**
 * Who may ask, and how often: failed-login throttling, authentication, then the business's
 * rate limit. Its `RateLimit` headers go on every answer to an authenticated request.
 */
export interface Admission {
  /** The authenticated business id; throws 401 or 429. */
  admit(event: H3Event, context: RequestContext): Promise<string>;
  /**
   * The business's rate limit alone, the check `admit` ends with: for a request whose business is
   * already known (a portal button, signed in by its session), so it costs what the API's call
   * costs. Its `RateLimit` headers go on `context`; throws 429 past the limit.
   */
  quota(businessId: string, context: RequestContext): Promise<void>;
}

export interface AdmissionOptions {
  readonly authenticator: Authenticator;
  readonly throttle: AuthThrottle;
  readonly rateLimiter: RateLimiter;
  /** See `http.trustProxyHops`. */
  readonly trustProxyHops: number;
  /** A login refused by the failed-login throttle (`warehouse_ingest_login_refusals_total`). */
  readonly onLoginRefused?: (reason: LoginRefusalReason) => void;
}

const REFUSED: Record<LoginRefusalReason, { log: string; detail: string }> = {
  client: {
    log: 'login refused: too many failed logins for this business id from this client',
    detail:
      'Too many failed logins for this business id from this address. Retry later with valid credentials.',
  },
  address: {
    log: 'login refused: too many business ids failed to log in from this client',
    detail:
      'Too many business ids failed to log in from this address. Retry later with valid credentials.',
  },
};

export function createAdmission(options: AdmissionOptions): Admission {
  const { authenticator, throttle, rateLimiter, trustProxyHops, onLoginRefused } = options;

  async function authenticate(event: H3Event, context: RequestContext): Promise<string> {
    const authorization = event.req.headers.get('authorization');
    const known = authenticator.known(authorization);
    if (known !== undefined) return known;

    const address = context.client ?? clientAddress(event, trustProxyHops);
    // A malformed header costs no scrypt run and guesses nothing: refused (401) without counting.
    const claimed = parseBasic(authorization).businessId;
    // Only unverified credentials get here (a scrypt run follows): awaiting costs nothing that matters.
    const refused = await throttle.refusal(address, claimed);
    if (refused) {
      onLoginRefused?.(refused.reason);
      const { log, detail } = REFUSED[refused.reason];
      context.log.warn({ triedBusinessId: claimed, reason: refused.reason }, log);
      throw new TooManyRequests(detail, refused.retryAfterSeconds);
    }
    const delay = await throttle.slowdownMs(claimed);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    try {
      return await authenticator.authenticate(authorization);
    } catch (error) {
      if (error instanceof Unauthorized) {
        await throttle.recordFailure(address, claimed);
        // The id that was tried (never the key): who is being guessed at, or whose connector is misconfigured.
        context.log.info({ triedBusinessId: claimed, slowedMs: delay }, 'login failed');
      }
      throw error;
    }
  }

  async function quota(businessId: string, context: RequestContext): Promise<void> {
    // Memory buckets answer at once: no extra turn of the event loop unless a shared store is used.
    const taken = rateLimiter.take(businessId);
    const decision = taken instanceof Promise ? await taken : taken;
    context.headers = rateLimitHeaders(rateLimiter, decision);
    if (!decision.allowed) {
      throw new TooManyRequests(
        `This business is over its request rate limit (${rateLimiter.policy}: q requests per w seconds).`,
        decision.retryAfterSeconds,
      );
    }
  }

  return {
    async admit(event, context) {
      context.client = clientAddress(event, trustProxyHops);
      const businessId = await authenticate(event, context);
      context.businessId = businessId;
      await quota(businessId, context);
      return businessId;
    },
    quota,
  };
}

/** A business's two limits, which every request acting for it passes, the API's and the portal's. */
export interface BusinessLimits {
  readonly admission: Admission;
  readonly bulkhead: Bulkhead;
}

/** Admits one action of a business; the function it resolves to gives its slot back. */
export type ActionAdmission = (businessId: string) => Promise<() => void>;

/**
 * What one action of a business costs (an event sent again, a test event), however it was asked
 * for: one request of its rate limit and one slot of its bulkhead while it runs, so a portal
 * button pressed a thousand times costs what a thousand API calls cost and leaves the other
 * businesses their share. 429 past either, before anything is published. The API's handlers pass
 * `charged` (their `admit` took the request already); the portal's buttons do not.
 */
export function actionAdmission(
  limits: BusinessLimits,
  context: RequestContext,
  charged = false,
): ActionAdmission {
  return async (businessId) => {
    if (!charged) await limits.admission.quota(businessId, context);
    return limits.bulkhead.enter(businessId, context.log);
  };
}

/** The socket's address, or the one `hops` proxies of ours saw (X-Forwarded-For, counted from the right). */
export function clientAddress(event: H3Event, hops: number): string {
  if (hops > 0) {
    const chain = (event.req.headers.get('x-forwarded-for') ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
    const seen = chain[chain.length - hops];
    if (seen) return seen.slice(0, 64);
  }
  const nodeRequest = (
    event.req as { runtime?: { node?: { req?: { socket?: { remoteAddress?: string } } } } }
  ).runtime?.node?.req;
  return nodeRequest?.socket?.remoteAddress ?? 'local';
}
