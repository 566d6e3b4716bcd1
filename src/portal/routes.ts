import { randomUUID } from 'node:crypto';
import type { H3 } from 'h3';
import type { EventActions } from '../events/actions.js';
import type { HistoryStore } from '../history/store.js';
import type { KeyClaims } from '../http-state/state.js';
import type { BusinessLimits } from '../http/admission.js';
import { clientAddress } from '../http/admission.js';
import { decoded } from '../http/partner-reads.js';
import type { Logger } from '../log.js';
import { PORTAL_CSS } from './assets.js';
import { mountBehindProxy } from './behind-proxy.js';
import { mountEventPages } from './event-routes.js';
import type { OperatorActions } from './operator-actions.js';
import type { OperatorCheck } from './operator-credentials.js';
import { mountOperatorPages } from './operator-routes.js';
import { createGuards, notFoundPage, readForm } from './guards.js';
import { verifyLink } from './links.js';
import { batchPage } from './pages/batch.js';
import { batchesPage } from './pages/batches.js';
import { eventPage } from './pages/events.js';
import { overviewPage } from './pages/overview.js';
import { messagePage } from './pages/layout.js';
import { continuePage, refusedLinkPage, signedOutPage } from './pages/login.js';
import {
  clearedCookie,
  type PortalSession,
  type SessionStore,
  scopeOf,
  sessionCookie,
} from './sessions.js';
import { batchesView, oneEvent, overviewView, recordsView, singleBatch } from './reads.js';

/**
 * The portal's routes on the public app, under `/portal`: sign-in with a link, sign-out, and the
 * pages of the signed-in business (its events and endpoints in event-routes.ts; an operator's
 * sign-in and pages in operator-routes.ts). An operator reads the same pages with the scope of the
 * business chosen, or of all (sessions.ts). Every page reads
 * through the partner API's own helpers (reads.ts), scoped to the session's business; every POST
 * of a signed-in page is checked for its Origin and its CSRF token before it does anything
 * (guards.ts).
 */
export interface PortalDependencies {
  /** Signs links and CSRF tokens (secret.ts). */
  readonly secret: Buffer;
  readonly sessions: SessionStore;
  /** The shared state's claims: a link's nonce is claimed once, until the link expires. */
  readonly claims: KeyClaims;
  /** The history's reads; undefined when it is off (the pages say so). */
  readonly history?: HistoryStore;
  /** The events worker's actions, as the partner API has them; undefined without a broker. */
  readonly events?: EventActions;
  /** The partner API's per-business limits, which the event buttons pass too; required with `events`. */
  readonly limits?: BusinessLimits;
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
  /** The configured operators' check (operator-credentials.ts); undefined: none configured. */
  readonly checkOperator?: OperatorCheck;
  /** Whether an operator of this name is configured now (guards.ts ends others' sessions). */
  readonly isOperator?: (name: string) => boolean;
  /** See `http.trustProxyHops`: whose address the operator sign-in limits count. @default 0 */
  readonly trustProxyHops?: number;
  /** What the operator's pages do (main.ts composes it). */
  readonly operatorActions?: OperatorActions;
  /** The businesses an operator may choose between. @default none */
  readonly businesses?: () => readonly string[];
  /** Days the history keeps batches (`history.retentionDays`): the overview's span. @default 30 */
  readonly retentionDays?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

export function mountPortal(app: H3, deps: PortalDependencies): void {
  const now = deps.now ?? Date.now;
  if (!deps.history)
    deps.log.warn(
      'portal: enabled without the history (history.enabled is false): its pages have nothing to show',
    );
  // Before every portal route: behind a proxy of ours, its path prefix goes into every answer.
  mountBehindProxy(app, deps.trustProxyHops ?? 0);
  const guards = createGuards(deps);
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
  const { guarded, signedIn, foreignOrigin, forbidden } = guards;

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
      if (!guards.served(businessId)) return refusedLinkPage('not-served');
      if (!spend(nonce, exp)) return refusedLinkPage('used');
      // The session first, the claim last: a store that fails (Redis away) fails before the link
      // is claimed, and the link is given back, so the next try signs in instead of being "used".
      // A claim whose answer was lost is released by the store when it is back (http-state/redis.ts).
      let session: PortalSession | undefined;
      try {
        session = await deps.sessions.create({ role: 'business', businessId });
        // Claimed until the link expires: after that the signature check refuses it anyway.
        const held = await deps.claims.claim(
          `portal-link:${nonce}`,
          { fingerprint: 'portal-link', claimant: randomUUID() },
          Math.max(1, exp - now()),
        );
        if (held !== undefined) {
          await deps.sessions.end(session.id);
          return refusedLinkPage('used');
        }
      } catch (error) {
        spent.delete(nonce);
        if (session) await deps.sessions.end(session.id).catch(() => undefined);
        throw error;
      }
      deps.log.info(
        { businessId, address: clientAddress(event, deps.trustProxyHops ?? 0) },
        'portal: signed in with a link',
      );
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
    guards.signedInPost(async (_event, session) => {
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

  // The first page: how the batches and deliveries went (pages/overview.ts).
  app.get(
    '/portal',
    signedIn(async (_event, session, viewer) =>
      overviewPage(
        await overviewView(deps.history, scopeOf(session), viewer, now(), deps.retentionDays ?? 30),
      ),
    ),
  );

  app.get(
    '/portal/batches',
    signedIn(async (event, session, viewer) =>
      batchesPage(await batchesView(deps.history, event, scopeOf(session), viewer)),
    ),
  );

  app.get(
    '/portal/batches/:correlationId',
    signedIn(async (event, session, viewer) => {
      const correlationId = decoded(event.context.params?.correlationId ?? '');
      const { entries, records } = await singleBatch(deps.history, scopeOf(session), correlationId);
      // Another business's batch is missing exactly as an unknown one is.
      if (entries.length === 0)
        return messagePage(
          404,
          'No such batch',
          'None of your batches has this correlation id in the history.',
          viewer,
        );
      return batchPage(viewer, entries, records);
    }),
  );

  app.get(
    '/portal/records',
    signedIn(async (event, session, viewer) =>
      recordsView(deps.history, event, scopeOf(session), viewer),
    ),
  );

  app.get(
    '/portal/events/:id',
    signedIn(async (event, session, viewer) => {
      const id = decoded(event.context.params?.id ?? '');
      const found = await oneEvent(deps.history, scopeOf(session), id);
      // Another business's event is missing exactly as an unknown one is.
      if (!found)
        return messagePage(
          404,
          'No such event',
          'None of your events has this id in the history.',
          viewer,
        );
      return eventPage(viewer, found, deps.events !== undefined);
    }),
  );

  mountEventPages(app, deps, guards);
  mountOperatorPages(app, { businesses: () => [], ...deps }, guards);

  app.all('/portal/**', async (event) =>
    notFoundPage(await guards.viewerOf(event).catch(() => undefined)),
  );
}
