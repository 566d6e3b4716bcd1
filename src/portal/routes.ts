import { randomUUID } from 'node:crypto';
import type { H3, H3Event } from 'h3';
import { InvalidQuery, isIngestError } from '../errors.js';
import type { HistoryStore } from '../history/store.js';
import type { KeyClaims } from '../http-state/state.js';
import { decoded } from '../http/partner-reads.js';
import type { Logger } from '../log.js';
import { PORTAL_CSS } from './assets.js';
import { html } from './html.js';
import { verifyLink } from './links.js';
import { batchPage } from './pages/batch.js';
import { batchesPage } from './pages/batches.js';
import { messagePage, type Viewer } from './pages/layout.js';
import { continuePage, notSignedInPage, refusedLinkPage, signedOutPage } from './pages/login.js';
import {
  clearedCookie,
  csrfMatches,
  csrfToken,
  type PortalSession,
  type SessionStore,
  sessionCookie,
  sessionIdFrom,
} from './sessions.js';
import { batchesView, recordsView, singleBatch } from './reads.js';

/**
 * The portal's routes on the public app, under `/portal`: sign-in with a link, sign-out, and the
 * pages of the signed-in business. Every page reads through the partner API's own helpers
 * (reads.ts), scoped to the session's business; every POST is checked for its Origin and its
 * CSRF token before it does anything.
 */
export interface PortalDependencies {
  /** Signs links and CSRF tokens (secret.ts). */
  readonly secret: Buffer;
  readonly sessions: SessionStore;
  /** The shared state's claims: a link's nonce is claimed once, until the link expires. */
  readonly claims: KeyClaims;
  /** The history's reads; undefined when it is off (the pages say so). */
  readonly history?: HistoryStore;
  /** Mark the cookie `Secure` (TLS on, or an https public URL). */
  readonly secureCookie: boolean;
  /** Origins a POST may come from besides the request's own (`http.publicUrls`). */
  readonly publicOrigins: readonly string[];
  readonly log: Logger;
  /**
   * Whether the business is still served (a reload may remove a tenant): a link made for one
   * that is not signs nobody in, and its sessions end. @default every business
   */
  readonly isTenant?: (businessId: string) => boolean;
  /** @default Date.now */
  readonly now?: () => number;
}

/** A form body read at most: a token or a CSRF field is far smaller. */
const MAX_FORM_BYTES = 8 * 1024;

export function mountPortal(app: H3, deps: PortalDependencies): void {
  const now = deps.now ?? Date.now;
  if (!deps.history)
    deps.log.warn(
      'portal: enabled without the history (history.enabled is false): its pages have nothing to show',
    );
  const guarded =
    (handler: (event: H3Event) => Promise<Response> | Response) =>
    async (event: H3Event): Promise<Response> => {
      try {
        return await handler(event);
      } catch (error) {
        return failurePage(error, deps.log);
      }
    };
  const signedIn =
    (handler: (event: H3Event, session: PortalSession, viewer: Viewer) => Promise<Response>) =>
    async (event: H3Event) => {
      const session = await sessionOf(event);
      if (!session) return notSignedInPage();
      const viewer = { businessId: session.businessId, csrf: csrfToken(deps.secret, session.id) };
      return handler(event, session, viewer);
    };
  const served = (businessId: string) => deps.isTenant?.(businessId) ?? true;
  const sessionOf = async (event: H3Event) => {
    const id = sessionIdFrom(event.req.headers.get('cookie'));
    const session = id === undefined ? undefined : await deps.sessions.get(id);
    if (session && !served(session.businessId)) {
      await deps.sessions.end(session.id);
      return undefined;
    }
    return session;
  };
  /**
   * Nonces this instance has seen spent, until their links expire: the shared claims alone
   * could forget one (in memory they share a bounded store with Idempotency-Key records), and a
   * link must never sign in twice. Only links signed with the secret get here, so it stays small.
   */
  const spent = new Map<string, number>();
  const spend = (nonce: string, exp: number): boolean => {
    const at = now();
    for (const [seen, until] of spent) if (until <= at) spent.delete(seen);
    if (spent.has(nonce)) return false;
    spent.set(nonce, exp);
    return true;
  };
  /** A POST from another site (a present Origin that is not ours) is refused before its body is read. */
  const foreignOrigin = (event: H3Event) => {
    const origin = event.req.headers.get('origin');
    if (origin === null) return false;
    return origin !== new URL(event.req.url).origin && !deps.publicOrigins.includes(origin);
  };
  const forbidden = () =>
    messagePage(
      403,
      'This form was refused',
      'It did not come from this portal, or it has expired. Go back, reload the page and try again.',
    );

  app.get('/portal/assets/portal.css', () => {
    return new Response(PORTAL_CSS, {
      headers: {
        'content-type': 'text/css; charset=utf-8',
        'cache-control': 'public, max-age=3600',
        'x-content-type-options': 'nosniff',
      },
    });
  });

  app.get(
    '/portal/login',
    guarded((event) => {
      const token = new URL(event.req.url).searchParams.get('token') ?? '';
      const check = verifyLink(deps.secret, token, now());
      // A bad or expired link says so now; whether it was used is known only when it is spent.
      return check.ok ? continuePage(token) : refusedLinkPage(check.reason);
    }),
  );

  app.post(
    '/portal/login',
    guarded(async (event) => {
      if (foreignOrigin(event)) return forbidden();
      const form = await readForm(event);
      if (!form) return refusedLinkPage('malformed');
      const check = verifyLink(deps.secret, form.get('token') ?? '', now());
      if (!check.ok) return refusedLinkPage(check.reason);
      const { businessId, exp, nonce } = check.claims;
      if (!served(businessId)) return refusedLinkPage('not-served');
      if (!spend(nonce, exp)) return refusedLinkPage('used');
      // Claimed until the link expires: after that the signature check refuses it anyway.
      const held = await deps.claims.claim(
        `portal-link:${nonce}`,
        { fingerprint: 'portal-link', claimant: randomUUID() },
        Math.max(1, exp - now()),
      );
      if (held !== undefined) return refusedLinkPage('used');
      const session = await deps.sessions.create(businessId);
      deps.log.info({ businessId }, 'portal: signed in with a link');
      return new Response(null, {
        status: 303,
        headers: {
          location: '/portal',
          'set-cookie': sessionCookie(session, deps.secureCookie, now()),
          'cache-control': 'no-store',
        },
      });
    }),
  );

  app.post(
    '/portal/logout',
    guarded(async (event) => {
      if (foreignOrigin(event)) return forbidden();
      const session = await sessionOf(event);
      if (!session) return notSignedInPage();
      const form = await readForm(event);
      if (!csrfMatches(deps.secret, session.id, form?.get('csrf') ?? undefined)) return forbidden();
      await deps.sessions.end(session.id);
      return new Response(null, {
        status: 303,
        headers: {
          location: '/portal/signed-out',
          'set-cookie': clearedCookie(deps.secureCookie),
          'cache-control': 'no-store',
        },
      });
    }),
  );

  app.get('/portal/signed-out', () => signedOutPage());

  app.get(
    '/portal',
    guarded(
      signedIn(async (event, session, viewer) =>
        batchesPage(await batchesView(deps.history, event, session.businessId, viewer)),
      ),
    ),
  );

  app.get(
    '/portal/batches/:correlationId',
    guarded(
      signedIn(async (event, session, viewer) => {
        const correlationId = decoded(event.context.params?.correlationId ?? '');
        const entries = await singleBatch(deps.history, session.businessId, correlationId);
        // Another business's batch is missing exactly as an unknown one is.
        if (entries.length === 0)
          return messagePage(
            404,
            'No such batch',
            'None of your batches has this correlation id in the history.',
            viewer,
          );
        return batchPage(viewer, entries);
      }),
    ),
  );

  app.get(
    '/portal/records',
    guarded(
      signedIn(async (event, session, viewer) =>
        recordsView(deps.history, event, session.businessId, viewer),
      ),
    ),
  );

  app.all('/portal/**', async (event) =>
    messagePage(
      404,
      'No such page',
      'The portal has no page at this address.',
      await viewerOf(event),
    ),
  );
  const viewerOf = async (event: H3Event): Promise<Viewer | undefined> => {
    const session = await sessionOf(event);
    return session && { businessId: session.businessId, csrf: csrfToken(deps.secret, session.id) };
  };
}

/** A urlencoded form body, or undefined when it is not one or is larger than a form can be. */
async function readForm(event: H3Event): Promise<URLSearchParams | undefined> {
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
function failurePage(error: unknown, log: Logger): Response {
  if (error instanceof InvalidQuery)
    return messagePage(
      400,
      'This address asks for something the portal cannot show',
      error.message,
      undefined,
      html`<ul>${(error.errors ?? []).map((e) => html`<li>${'path' in e ? `${e.path}: ${e.message}` : ''}</li>`)}</ul><p><a href="/portal">Back to your batches</a></p>`,
    );
  const status = isIngestError(error) ? error.status : 500;
  if (status >= 500) log.error({ err: error }, 'portal: page failed');
  if (status === 404 && isIngestError(error))
    return messagePage(404, 'Nothing to show', error.message);
  return messagePage(
    status >= 500 ? 503 : status,
    'The portal cannot show this page now',
    'Something on our side is not available. Try again in a minute.',
  );
}
