import type { H3Event } from 'h3';
import { InvalidQuery, isIngestError } from '../errors.js';
import type { Logger } from '../log.js';
import { forwardedOrigin } from './behind-proxy.js';
import { html } from './html.js';
import { messagePage, type Viewer } from './pages/layout.js';
import { notSignedInPage } from './pages/login.js';
import {
  csrfMatches,
  csrfToken,
  type OperatorSession,
  type PortalSession,
  type SessionStore,
  sessionIdFrom,
} from './sessions.js';

/**
 * What every portal route goes through before it does its work: a failure becomes a page (never
 * a stack), a signed-in page needs its session, and a POST of a signed-in page needs our Origin
 * and the session's CSRF token — checked here once, so no route can forget one.
 */
export interface GuardDependencies {
  readonly secret: Buffer;
  readonly sessions: SessionStore;
  /** Origins a POST may come from besides the request's own (`http.publicUrls`). */
  readonly publicOrigins: readonly string[];
  readonly log: Logger;
  /**
   * Whether the business is still served (a reload may remove a tenant): a session of one that
   * is not ends at its next page. @default every business
   */
  readonly isTenant?: (businessId: string) => boolean;
  /** The businesses an operator may choose between (the configured tenants). @default none */
  readonly businesses?: () => readonly string[];
  /**
   * Whether an operator of this name is configured now: asked at every request, so a session
   * of one removed (by a reload, or before a restart, its session kept on Redis) ends at its
   * next page. @default nobody
   */
  readonly isOperator?: (name: string) => boolean;
  /** See `http.trustProxyHops`: with a proxy of ours, its `X-Forwarded-Proto`/`-Host` are our origin too. @default 0 */
  readonly trustProxyHops?: number;
}

export type SignedInHandler = (
  event: H3Event,
  session: PortalSession,
  viewer: Viewer,
) => Promise<Response>;

export interface PortalGuards {
  /** Any failure of `handler` as a page: a bad query names its parameters, the rest is logged. */
  guarded(
    handler: (event: H3Event) => Promise<Response> | Response,
  ): (event: H3Event) => Promise<Response>;
  /** `handler` with the session and its viewer; the not-signed-in page without one. */
  signedIn(handler: SignedInHandler): (event: H3Event) => Promise<Response>;
  /**
   * A signed-in form's POST: refused (403) from another site or without the session's CSRF
   * token, before `handler` runs; `form` is the body read.
   */
  signedInPost(
    handler: (
      ...args: [...Parameters<SignedInHandler>, form: URLSearchParams]
    ) => Promise<Response>,
  ): (event: H3Event) => Promise<Response>;
  /**
   * An operator's page: anyone else (a business, nobody signed in) gets the portal's not-found
   * page, exactly as for an address the portal does not have.
   */
  operatorOnly(
    handler: (event: H3Event, session: OperatorSession, viewer: Viewer) => Promise<Response>,
  ): (event: H3Event) => Promise<Response>;
  /** An operator's form POST: not found for anyone else, then checked as `signedInPost`. */
  operatorPost(
    handler: (
      event: H3Event,
      session: OperatorSession,
      viewer: Viewer,
      form: URLSearchParams,
    ) => Promise<Response>,
  ): (event: H3Event) => Promise<Response>;
  /** A POST from another site: a present Origin that is not ours. */
  foreignOrigin(event: H3Event): boolean;
  sessionOf(event: H3Event): Promise<PortalSession | undefined>;
  viewerOf(event: H3Event): Promise<Viewer | undefined>;
  /** Whether the business is still served. */
  served(businessId: string): boolean;
  forbidden(): Response;
}

/** The page of an address the portal does not have (and of an operator's, to anyone else). */
export function notFoundPage(viewer: Viewer | undefined): Response {
  return messagePage(404, 'No such page', 'The portal has no page at this address.', viewer);
}

/** A form body read at most: a token or a CSRF field is far smaller. */
const MAX_FORM_BYTES = 8 * 1024;

export function createGuards(deps: GuardDependencies): PortalGuards {
  const served = (businessId: string) => deps.isTenant?.(businessId) ?? true;
  const sessionOf = async (event: H3Event) => {
    const id = sessionIdFrom(event.req.headers.get('cookie'));
    const session = id === undefined ? undefined : await deps.sessions.get(id);
    const gone =
      session !== undefined &&
      (session.role === 'business'
        ? !served(session.businessId)
        : !(deps.isOperator?.(session.operator) ?? false));
    if (gone) {
      await deps.sessions.end(session.id);
      return undefined;
    }
    return session;
  };
  const viewer = (session: PortalSession): Viewer => {
    const csrf = csrfToken(deps.secret, session.id);
    if (session.role === 'business')
      return { role: 'business', businessId: session.businessId, csrf };
    const { operator, business } = session;
    return { role: 'operator', operator, business, businesses: deps.businesses?.() ?? [], csrf };
  };
  const foreignOrigin = (event: H3Event) => {
    const origin = event.req.headers.get('origin');
    if (origin === null) return false;
    return (
      origin !== new URL(event.req.url).origin &&
      origin !== forwardedOrigin(event, deps.trustProxyHops ?? 0) &&
      !deps.publicOrigins.includes(origin)
    );
  };
  const forbidden = () =>
    messagePage(
      403,
      'This form was refused',
      'It did not come from this portal, or it has expired. Go back, reload the page and try again.',
    );
  const guarded: PortalGuards['guarded'] = (handler) => async (event) => {
    try {
      return await handler(event);
    } catch (error) {
      // The sessions' store may be what failed (Redis away): the page then has no navigation.
      return failurePage(error, deps.log, await viewerOf(event).catch(() => undefined));
    }
  };
  const viewerOf = async (event: H3Event) => {
    const session = await sessionOf(event);
    return session && viewer(session);
  };
  /** The form of a session's POST, or the refusal: another site's Origin, no CSRF token of its own. */
  const checkedForm = async (event: H3Event, session: PortalSession) => {
    if (foreignOrigin(event)) return forbidden();
    const form = await readForm(event);
    if (!form || !csrfMatches(deps.secret, session.id, form.get('csrf') ?? undefined))
      return forbidden();
    return form;
  };
  const notFound = (session: PortalSession | undefined) => notFoundPage(session && viewer(session));
  return {
    guarded,
    operatorOnly: (handler) =>
      guarded(async (event) => {
        const session = await sessionOf(event);
        return session?.role === 'operator'
          ? handler(event, session, viewer(session))
          : notFound(session);
      }),
    operatorPost: (handler) =>
      guarded(async (event) => {
        // Whether the address exists is no business of anyone but an operator: asked first.
        const session = await sessionOf(event);
        if (session?.role !== 'operator') return notFound(session);
        const form = await checkedForm(event, session);
        return form instanceof Response ? form : handler(event, session, viewer(session), form);
      }),
    signedIn: (handler) =>
      guarded(async (event) => {
        const session = await sessionOf(event);
        return session ? handler(event, session, viewer(session)) : notSignedInPage();
      }),
    signedInPost: (handler) =>
      guarded(async (event) => {
        // Refused before the body is read.
        if (foreignOrigin(event)) return forbidden();
        const session = await sessionOf(event);
        if (!session) return notSignedInPage();
        const form = await checkedForm(event, session);
        return form instanceof Response ? form : handler(event, session, viewer(session), form);
      }),
    foreignOrigin,
    sessionOf,
    viewerOf,
    served,
    forbidden,
  };
}

/** A urlencoded form body, or undefined when it is not one or is larger than a form can be. */
export async function readForm(event: H3Event): Promise<URLSearchParams | undefined> {
  const type = event.req.headers.get('content-type') ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded')) return undefined;
  if (Number(event.req.headers.get('content-length') ?? 0) > MAX_FORM_BYTES) return undefined;
  // Read up to the cap and no further: a chunked body has no length to refuse up front.
  const reader = event.req.body?.getReader();
  if (!reader) return new URLSearchParams();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_FORM_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** A failure as a page: a bad query names its parameters; anything else is logged, never shown. */
function failurePage(error: unknown, log: Logger, viewer: Viewer | undefined): Response {
  if (error instanceof InvalidQuery)
    return messagePage(
      400,
      'This address asks for something the portal cannot show',
      error.message,
      viewer,
      html`<ul>${(error.errors ?? []).map((e) => html`<li>${'path' in e ? `${e.path}: ${e.message}` : ''}</li>`)}</ul><p><a href="/portal">Back to the overview</a></p>`,
    );
  const status = isIngestError(error) ? error.status : 500;
  if (status >= 500) log.error({ err: error }, 'portal: page failed');
  if (status === 404 && isIngestError(error))
    return messagePage(404, 'Nothing to show', error.message, viewer);
  return messagePage(
    status >= 500 ? 503 : status,
    'The portal cannot show this page now',
    'Something on our side is not available. Try again in a minute.',
    viewer,
  );
}
