import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * Portal sessions: a random 32-byte id in an HttpOnly cookie, mapped to the business its link
 * signed in. Kept in this instance's memory (bounded, least recently used forgotten first, each
 * expiring `ttlMs` after sign-in): the shared state has no get/put to keep them in Redis yet, so
 * behind a load balancer a session holds only on the instance that made it (sticky sessions).
 *
 * The CSRF token of a session's forms is an HMAC of its id with the portal secret: nothing more
 * to keep, and no form of one session is valid in another.
 */
export const SESSION_COOKIE = 'portal_session';

export interface PortalSession {
  readonly id: string;
  readonly businessId: string;
  /** ms since the epoch. */
  readonly expiresAt: number;
}

export interface SessionStore {
  create(businessId: string): PortalSession;
  get(id: string): PortalSession | undefined;
  end(id: string): void;
}

export interface SessionStoreOptions {
  readonly ttlMs: number;
  /** Sessions kept at most. @default 10000 */
  readonly max?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const now = options.now ?? Date.now;
  const sessions = new LRUCache<string, PortalSession>({ max: options.max ?? 10_000 });
  return {
    create(businessId) {
      const session = {
        id: randomBytes(32).toString('base64url'),
        businessId,
        expiresAt: now() + options.ttlMs,
      };
      sessions.set(session.id, session);
      return session;
    },
    get(id) {
      const session = sessions.get(id);
      if (!session || session.expiresAt > now()) return session;
      sessions.delete(id);
      return undefined;
    },
    end(id) {
      sessions.delete(id);
    },
  };
}

/** The CSRF token every form of this session carries. */
export function csrfToken(secret: Buffer, sessionId: string): string {
  return createHmac('sha256', secret).update(`portal-csrf.${sessionId}`).digest('base64url');
}

/** Whether `given` is this session's CSRF token (constant time). */
export function csrfMatches(secret: Buffer, sessionId: string, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(csrfToken(secret, sessionId));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** `Set-Cookie` for a new session: script-proof, same-site only, under /portal only. */
export function sessionCookie(session: PortalSession, secure: boolean, now = Date.now()): string {
  const maxAge = Math.max(0, Math.floor((session.expiresAt - now) / 1000));
  return `${SESSION_COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/portal; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
}

/** `Set-Cookie` that removes the session cookie. */
export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/portal; Max-Age=0${secure ? '; Secure' : ''}`;
}

/** The session id a `Cookie` header carries, if any. */
export function sessionIdFrom(cookieHeader: string | null): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return value.join('=') || undefined;
  }
  return undefined;
}
