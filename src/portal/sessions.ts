import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Scope } from '../history/store.js';
import type { ValueStore } from '../http-state/state.js';

/**
 * Portal sessions: a random 32-byte id in an HttpOnly cookie, mapped to who signed in — the
 * business its link was made for, or an operator with a password. Kept in the shared state's values (http-state/state.ts): in memory with one
 * instance; on Redis every instance of a fleet reads the same, so no sticky sessions are needed
 * and a restart signs nobody out. The key is a hash of the id: a copy of the store holds no
 * cookie that could be replayed.
 *
 * The CSRF token of a session's forms is an HMAC of its id with the portal secret: nothing more
 * to keep, and no form of one session is valid in another.
 */
export const SESSION_COOKIE = 'portal_session';

/**
 * Who a session is for. A business reads its own data only; an operator reads any business's,
 * the one chosen in the banner (`business`), or all of them (null). One union, so no page can
 * take an operator for a business or the reverse: the compiler asks which one it is.
 */
export type SessionSubject =
  | { readonly role: 'business'; readonly businessId: string }
  | { readonly role: 'operator'; readonly operator: string; readonly business: string | null };

export type PortalSession = SessionSubject & {
  readonly id: string;
  /** ms since the epoch. */
  readonly expiresAt: number;
};

export type BusinessSession = Extract<PortalSession, { role: 'business' }>;
export type OperatorSession = Extract<PortalSession, { role: 'operator' }>;

export const isOperator = (session: PortalSession): session is OperatorSession =>
  session.role === 'operator';

/** What the session's pages read in the history: its business, or an operator's choice. */
export function scopeOf(session: PortalSession): Scope {
  if (session.role === 'business') return { businessId: session.businessId };
  return session.business === null ? { operator: true } : { businessId: session.business };
}

/** The one business the session acts for, when there is one (an operator viewing all has none). */
export function businessOf(session: PortalSession): string | undefined {
  return session.role === 'business' ? session.businessId : (session.business ?? undefined);
}

/** Who did something, for the logs: the business, or the operator (and the business chosen). */
export function actor(session: PortalSession): Record<string, string> {
  if (session.role === 'business') return { businessId: session.businessId };
  return {
    operator: session.operator,
    ...(session.business !== null && { businessId: session.business }),
  };
}

export interface SessionStore {
  create(subject: SessionSubject): Promise<PortalSession>;
  get(id: string): Promise<PortalSession | undefined>;
  /** Keeps the session's expiry; `subject` replaces who it is for (an operator's choice of business). */
  update(session: PortalSession, subject: SessionSubject): Promise<PortalSession>;
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

/**
 * A stored session's subject. One written before operators existed has only `businessId`: a
 * business's. Anything else is no session.
 */
export function parseSubject(stored: unknown): SessionSubject | undefined {
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { role, businessId, operator, business } = stored as Record<string, unknown>;
  if (role === 'operator' && typeof operator === 'string')
    return { role, operator, business: typeof business === 'string' ? business : null };
  if ((role === 'business' || role === undefined) && typeof businessId === 'string')
    return { role: 'business', businessId };
  return undefined;
}

export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const now = options.now ?? Date.now;
  const { values } = options;
  const save = async (session: PortalSession) => {
    const { id: _id, ...kept } = session;
    await values.set(
      keyOf(session.id),
      JSON.stringify(kept),
      Math.max(1, session.expiresAt - now()),
    );
    return session;
  };
  return {
    create: (subject) =>
      save({
        ...subject,
        id: randomBytes(32).toString('base64url'),
        expiresAt: now() + options.ttlMs,
      }),
    async get(id) {
      const text = await values.get(keyOf(id));
      if (text === undefined) return undefined;
      const stored = JSON.parse(text) as { expiresAt?: unknown };
      const subject = parseSubject(stored);
      if (subject && typeof stored.expiresAt === 'number' && stored.expiresAt > now())
        return { ...subject, id, expiresAt: stored.expiresAt };
      await values.delete(keyOf(id));
      return undefined;
    },
    update: (session, subject) =>
      save({ ...subject, id: session.id, expiresAt: session.expiresAt }),
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
