import type { H3, H3Event } from 'h3';
import { LRUCache } from 'lru-cache';
import { TooManyRequests, toProblem } from '../errors.js';
import { clientAddress } from '../http/admission.js';
import { decoded } from '../http/partner-reads.js';
import type { Logger } from '../log.js';
import type { PortalGuards } from './guards.js';
import { readForm } from './guards.js';
import { createNotices } from './notices.js';
import type { OperatorCheck } from './operator-credentials.js';
import type { OperatorActions } from './operator-actions.js';
import { deadLettersPage, replayNotice } from './pages/dead-letters.js';
import { dropsPage, reprocessNotice } from './pages/drops.js';
import { operatorSignInPage, passwordHashPage } from './pages/operator-sign-in.js';
import { type SessionStore, sessionCookie } from './sessions.js';

/**
 * The operator's part of the portal: sign-in with a name and password, the choice of business
 * the business pages show, each drop's inputs with Reprocess, the events' dead letters with
 * Replay. Every page and POST past the sign-in is an operator's only (guards.ts): to a business
 * it does not exist. Signing out is the business's own `POST /portal/logout`.
 */
export interface OperatorPagesDependencies {
  readonly sessions: SessionStore;
  /** Undefined (or no operator configured now): the sign-in refuses everyone. */
  readonly checkOperator?: OperatorCheck;
  readonly operatorActions?: OperatorActions;
  /** The businesses an operator may choose (the served tenants). */
  readonly businesses: () => readonly string[];
  readonly secureCookie: boolean;
  /** See `http.trustProxyHops`: the client's address the sign-in limits count. @default 0 */
  readonly trustProxyHops?: number;
  readonly log: Logger;
  /** @default Date.now */
  readonly now?: () => number;
}

export function mountOperatorPages(
  app: H3,
  deps: OperatorPagesDependencies,
  guards: PortalGuards,
): void {
  const now = deps.now ?? Date.now;
  const { take, backTo } = createNotices();
  const { operatorOnly, operatorPost } = guards;
  /** A signed-in operator's password hashed again at the current cost, shown once (then forgotten). */
  const rehashed = new LRUCache<string, string>({ max: 1_000, ttl: 10 * 60_000 });

  app.get(
    '/portal/operator',
    guards.guarded(() => operatorSignInPage()),
  );

  app.post(
    '/portal/operator',
    guards.guarded(async (event) => {
      if (guards.foreignOrigin(event)) return guards.forbidden();
      const form = await readForm(event);
      const name = (form?.get('name') ?? '').slice(0, 64);
      if (!deps.checkOperator) return operatorSignInPage('none-configured');
      const address = clientAddress(event, deps.trustProxyHops ?? 0);
      const check = await deps.checkOperator(name, form?.get('password') ?? '', address);
      if (!check.ok) {
        deps.log.warn(
          {
            operator: name,
            address,
            why: check.why,
            ...('limit' in check && { limit: check.limit }),
          },
          'portal: operator sign-in refused',
        );
        if (check.why === 'wrong' || check.why === 'none-configured')
          return operatorSignInPage(check.why, name);
        return tooManyTries(event, name, check.retryAfterSeconds);
      }
      const session = await deps.sessions.create({
        role: 'operator',
        operator: check.name,
        business: null,
      });
      deps.log.info({ operator: check.name, address }, 'portal: operator signed in');
      if (check.rehashed) {
        deps.log.warn(
          { operator: check.name },
          "portal: the operator's password hash is below the current scrypt cost; its page shows the new one for portal.operators",
        );
        rehashed.set(session.id, check.rehashed);
      }
      return new Response(null, {
        status: 303,
        headers: {
          location: check.rehashed ? '/portal/operator/password-hash' : '/portal',
          'set-cookie': sessionCookie(session, deps.secureCookie, now()),
          'cache-control': 'no-store',
        },
      });
    }),
  );

  app.get(
    '/portal/operator/password-hash',
    operatorOnly(async (_event, session, viewer) => {
      const hash = rehashed.get(session.id);
      rehashed.delete(session.id);
      return passwordHashPage(viewer, hash);
    }),
  );

  app.post(
    '/portal/operator/business',
    operatorPost(async (_event, session, _viewer, form) => {
      const chosen = form.get('business') ?? '';
      // Only a served business, or all of them: anything else is all.
      const business = deps.businesses().includes(chosen) ? chosen : null;
      await deps.sessions.update(session, { ...session, business });
      return new Response(null, {
        status: 303,
        headers: { location: '/portal', 'cache-control': 'no-store' },
      });
    }),
  );

  const actions = deps.operatorActions;

  app.get(
    '/portal/operator/drops',
    operatorOnly(async (_event, session, viewer) => {
      const notice = take(`${session.id}:drops`);
      return dropsPage({
        viewer,
        drops: (await actions?.drops()) ?? [],
        ...(notice && { notice }),
      });
    }),
  );

  app.post(
    '/portal/operator/drops/:pipeline/:sha256/reprocess',
    operatorPost(async (event, session) => {
      const pipeline = decoded(event.context.params?.pipeline ?? '');
      const sha256 = event.context.params?.sha256 ?? '';
      const answer = await actions?.reprocess(pipeline, sha256);
      deps.log.info(
        { operator: session.operator, pipeline, sha256, outcome: answer?.outcome },
        'portal: input reprocessed',
      );
      return backTo(
        '/portal/operator/drops',
        `${session.id}:drops`,
        reprocessNotice(pipeline, answer),
      );
    }),
  );

  app.get(
    '/portal/operator/dead-letters',
    operatorOnly(async (_event, session, viewer) => {
      const notice = take(`${session.id}:dead-letters`);
      const letters = await actions?.deadLetters?.();
      return deadLettersPage({
        viewer,
        ...(letters && { letters }),
        ...(notice && { notice }),
      });
    }),
  );

  app.post(
    '/portal/operator/dead-letters/:id/replay',
    operatorPost(async (event, session) => {
      const id = decoded(event.context.params?.id ?? '');
      const answer = (await actions?.replay?.(id)) ?? { end: 'not-found' as const };
      deps.log.info(
        { operator: session.operator, eventId: id, end: answer.end },
        'portal: dead letter replayed',
      );
      return backTo(
        '/portal/operator/dead-letters',
        `${session.id}:dead-letters`,
        replayNotice(id, answer),
      );
    }),
  );
}

/**
 * A sign-in refused before any hashing: the page again for a browser, problem details for
 * anything else (a script flooding the form reads a status and `Retry-After`, not a page).
 */
function tooManyTries(event: H3Event, name: string, retryAfterSeconds: number): Response {
  if ((event.req.headers.get('accept') ?? '').includes('text/html'))
    return operatorSignInPage('throttled', name, retryAfterSeconds);
  const { problem, headers } = toProblem(
    new TooManyRequests(
      'Too many operator sign-ins from this address or in all: nothing was checked. Retry after Retry-After.',
      retryAfterSeconds,
    ),
    event.url.pathname,
  );
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: {
      ...headers,
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
    },
  });
}
