import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ValueStore } from '../http-state/state.js';

/**
 * Portal sessions: a random 32-byte id in an HttpOnly cookie, mapped to the business its link
 * signed in. Kept in the shared state's values (http-state/state.ts): in memory with one
 * instance; on Redis every instance of a fleet reads the same, so no sticky sessions are needed
 * and a restart signs nobody out. The key is a hash of the id: a copy of the store holds no
 * cookie that could be replayed.
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
  create(businessId: string): Promise<PortalSession>;
  get(id: string): Promise<PortalSession | undefined>;
  end(id: string): Promise<void>;
}

export interface SessionStoreOptions {
  readonly ttlMs: number;
  /** Where sessions are kept: the shared state's values. */
  readonly values: ValueStore;
  /** @default Date.now */
  readonly now?: () => number;
}

const keyOf = (id: string) => `portal-session:${createHash('sha256').update(id).digest('hex')}`;

export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const now = options.now ?? Date.now;
  const { values } = options;
  return {
    async create(businessId) {
      const session = {
        id: randomBytes(32).toString('base64url'),
        businessId,
        expiresAt: now() + options.ttlMs,
      };
      await values.set(
        keyOf(session.id),
        JSON.stringify({ businessId, expiresAt: session.expiresAt }),
        options.ttlMs,
      );
      return session;
    },
    async get(id) {
      const text = await values.get(keyOf(id));
      if (text === undefined) return undefined;
      const { businessId, expiresAt } = JSON.parse(text) as Omit<PortalSession, 'id'>;
      if (expiresAt > now()) return { id, businessId, expiresAt };
      await values.delete(keyOf(id));
      return undefined;
    },
    async end(id) {
      await values.delete(keyOf(id));
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
