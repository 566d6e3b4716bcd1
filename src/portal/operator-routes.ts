import type { H3 } from 'h3';
import { decoded } from '../http/partner-reads.js';
import type { Logger } from '../log.js';
import type { PortalGuards } from './guards.js';
import { readForm } from './guards.js';
import { createNotices } from './notices.js';
import type { OperatorCheck } from './operator-credentials.js';
import type { OperatorActions } from './operator-actions.js';
import { deadLettersPage, replayNotice } from './pages/dead-letters.js';
import { dropsPage, reprocessNotice } from './pages/drops.js';
import { operatorSignInPage } from './pages/operator-sign-in.js';
import { type SessionStore, sessionCookie } from './sessions.js';

/**
 * The operator's part of the portal: sign-in with a name and password, the choice of business
 * the business pages show, each drop's inputs with Reprocess, the events' dead letters with
 * Replay. Every page and POST past the sign-in is an operator's only (guards.ts): to a business
 * it does not exist. Signing out is the business's own `POST /portal/logout`.
 */
export interface OperatorPagesDependencies {
  readonly sessions: SessionStore;
  /** Undefined when no operator is configured: the sign-in refuses everyone. */
  readonly checkOperator?: OperatorCheck;
  readonly operatorActions?: OperatorActions;
  /** The businesses an operator may choose (the served tenants). */
  readonly businesses: () => readonly string[];
  readonly secureCookie: boolean;
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
      const check = await deps.checkOperator(name, form?.get('password') ?? '');
      if (!check.ok) {
        deps.log.warn({ operator: name, why: check.why }, 'portal: operator sign-in refused');
        return check.why === 'throttled'
          ? operatorSignInPage('throttled', name, check.retryAfterSeconds)
          : operatorSignInPage('wrong', name);
      }
      const session = await deps.sessions.create({
        role: 'operator',
        operator: check.name,
        business: null,
      });
      deps.log.info({ operator: check.name }, 'portal: operator signed in');
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
