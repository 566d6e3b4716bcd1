import type { H3 } from 'h3';
import { NoSubscriber, NotFound, PublishFailed, TooManyRequests } from '../errors.js';
import type { EventActions } from '../events/actions.js';
import type { HistoryStore } from '../history/store.js';
import { resendEvent } from '../http/partner-events.js';
import { decoded, historyOf } from '../http/partner-reads.js';
import { listWebhooks, sendTestEvent } from '../http/partner-webhooks.js';
import { actionAdmission, type BusinessLimits } from '../http/admission.js';
import { requestContext } from '../http/respond.js';
import type { Logger } from '../log.js';
import { html } from './html.js';
import type { PortalGuards } from './guards.js';
import { eventsPage } from './pages/events.js';
import { messagePage, type Notice, page, type Viewer } from './pages/layout.js';
import { chooseBusinessPage, noEventsPage, webhooksPage } from './pages/webhooks.js';
import { actor, businessOf, scopeOf } from './sessions.js';
import { createNotices } from './notices.js';
import { eventsView } from './reads.js';

/**
 * The portal's events and endpoints pages, and their two buttons: Resend (an event sent again,
 * `POST /api/v2/events/{id}/resend`) and Send test event (`POST /api/v2/webhooks/{id}/test`),
 * done by the same functions as the API's, with the events worker's actions (main.ts hands the
 * portal the ones it hands the HTTP app). A button's POST answers 303 back to its page, which
 * shows what it did once (notices.ts). Each press is admitted as the API's call is (the business's
 * rate limit and bulkhead, `actionAdmission`); past them it answers a 429 page, nothing sent.
 */
export interface EventPagesDependencies {
  readonly history?: HistoryStore;
  /** Undefined when this service runs no events worker (no broker): the pages say so. */
  readonly events?: EventActions;
  /** The partner API's limits (build.ts makes them); required with `events`. */
  readonly limits?: BusinessLimits;
  readonly log: Logger;
}

/** A button pressed past the business's limits: what the API answers, as a page. */
function refusedPage(error: TooManyRequests, viewer: Viewer, headers: Record<string, string>) {
  const retryAfter = error.headers['retry-after'] ?? '1';
  return page({
    status: 429,
    title: 'Too many requests',
    viewer,
    headers: { ...headers, ...error.headers },
    body: html`<h1>Too many requests</h1><p>${error.message}</p><p>Nothing was sent. Try again in ${retryAfter} second(s).</p>`,
  });
}

export function mountEventPages(app: H3, deps: EventPagesDependencies, guards: PortalGuards) {
  const { take, backTo } = createNotices();
  const { limits } = deps;
  // A button without the business's limits would be the way around them.
  if (deps.events && !limits)
    throw new Error("The portal's event buttons need the partner API's limits (limits).");

  app.get(
    '/portal/events',
    guards.signedIn(async (event, session, viewer) => {
      if (!deps.events) return noEventsPage(viewer, 'events');
      const notice = take(`${session.id}:events`);
      return eventsPage(await eventsView(deps.history, event, scopeOf(session), viewer, notice));
    }),
  );

  app.post(
    '/portal/events/:id/resend',
    guards.signedInPost(async (event, session, viewer) => {
      if (!deps.events || !limits) return noEventsPage(viewer, 'events');
      const id = decoded(event.context.params?.id ?? '');
      const context = requestContext(event, deps.log);
      let notice: Notice;
      try {
        const to = await resendEvent(
          historyOf(deps, 'events'),
          deps.events,
          actionAdmission(limits, context),
          scopeOf(session),
          id,
        );
        deps.log.info(
          { ...actor(session), eventId: id, endpoints: to },
          'portal: event sent again',
        );
        notice = { tone: 'done', text: `Event ${id} sent again to ${to.join(', ')}.` };
      } catch (error) {
        // Another business's event is missing exactly as an unknown one is; nothing was sent.
        if (error instanceof NotFound)
          return messagePage(404, 'No such event', error.message, viewer);
        if (error instanceof TooManyRequests) return refusedPage(error, viewer, context.headers);
        if (error instanceof NoSubscriber)
          notice = { tone: 'failed', text: `Event ${id} was not sent: ${error.message}` };
        else if (error instanceof PublishFailed)
          notice = {
            tone: 'failed',
            text: `Event ${id} could not be sent just now (${error.message.replace(/\.$/, '')}). Try again in a minute.`,
          };
        else throw error;
      }
      return backTo('/portal/events', `${session.id}:events`, notice);
    }),
  );

  app.get(
    '/portal/webhooks',
    guards.signedIn(async (_event, session, viewer) => {
      if (!deps.events) return noEventsPage(viewer, 'webhooks');
      const businessId = businessOf(session);
      if (businessId === undefined) return chooseBusinessPage(viewer);
      const notice = take(`${session.id}:webhooks`);
      return webhooksPage({
        viewer,
        endpoints: await listWebhooks(deps.events, deps.history, businessId),
        ...(notice && { notice }),
      });
    }),
  );

  app.post(
    '/portal/webhooks/:id/test',
    guards.signedInPost(async (event, session, viewer) => {
      if (!deps.events || !limits) return noEventsPage(viewer, 'webhooks');
      const id = decoded(event.context.params?.id ?? '');
      const businessId = businessOf(session);
      if (businessId === undefined) return chooseBusinessPage(viewer);
      const context = requestContext(event, deps.log);
      let test: Awaited<ReturnType<typeof sendTestEvent>>;
      try {
        test = await sendTestEvent(deps.events, actionAdmission(limits, context), businessId, id);
      } catch (error) {
        if (error instanceof NotFound)
          return messagePage(404, 'No such endpoint', error.message, viewer);
        if (error instanceof TooManyRequests) return refusedPage(error, viewer, context.headers);
        throw error;
      }
      const { eventId, attempt } = test;
      deps.log.info(
        { ...actor(session), businessId, endpoint: id, end: attempt.end },
        'portal: test event sent',
      );
      const answer = attempt.error ?? attempt.responseExcerpt;
      const notice: Notice = {
        tone: attempt.end === 'delivered' ? 'done' : 'failed',
        text: `Test event ${eventId} to ${attempt.endpoint}: ${attempt.end}${
          attempt.status === undefined ? '' : `, status ${attempt.status}`
        }, in ${attempt.durationMs} ms${answer ? ` — ${answer.slice(0, 200)}` : ''}.`,
      };
      return backTo('/portal/webhooks', `${session.id}:webhooks`, notice);
    }),
  );
}
