import type { H3Event } from 'h3';
import { z } from 'zod';
import { EVENT_ID, EVENT_TYPE } from '../events/event.js';
import type { EventActions } from '../events/actions.js';
import type {
  AttemptEntry,
  EventEntry,
  EventPage,
  EventWithAttempts,
  HistoryStore,
  Scope,
} from '../history/store.js';
import { NotFound } from '../errors.js';
import {
  actionsOf,
  decoded,
  encodeCursor,
  historyOf,
  listQuery,
  type PartnerEventsDependencies,
  type PartnerReadDependencies,
  queryTime,
  readListQuery,
  readQuery,
} from './partner-reads.js';
import { type ActionAdmission, actionAdmission } from './admission.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * A page of the business's events with their attempts, as `GET /api/v2/events` reads it: its
 * filters, `limit` and `cursor` from the query (`params` instead: the portal's filter form).
 */
export function readEventPage(
  history: HistoryStore,
  scope: Scope,
  event: H3Event,
  params?: Record<string, string>,
): Promise<EventPage> {
  const { filter, limit, after } = readListQuery(
    event,
    EventQuery,
    (id) => EVENT_ID.test(id),
    params,
  );
  return history.listEvents(scope, filter, { limit, ...(after && { after }) });
}

/**
 * One of the business's events sent again (`EventActions.resend`): answers the endpoints it went
 * to. `NotFound` for an id the business lacks, exactly as for an unknown one. Admitted for the
 * event's business (`admit`: its rate limit and bulkhead) once it is found, before anything is
 * published: the API and the portal's button pass the same admission.
 */
export async function resendEvent(
  history: HistoryStore,
  actions: EventActions,
  admit: ActionAdmission,
  scope: Scope,
  id: string,
  endpoint?: string,
): Promise<readonly string[]> {
  const found = await history.event(scope, id);
  if (!found)
    throw new NotFound({
      detail: `No event of yours has id ${JSON.stringify(id.slice(0, 100))} in the history.`,
    });
  const leave = await admit(found.businessId);
  try {
    return await actions.resend(found, endpoint);
  } finally {
    leave();
  }
}

/**
 * GET /api/v2/events: the warehouse's events about the business, newest first as the service
 * received them, each with its delivery attempts — what a connector developer asks when a
 * delivery failed ("did you send it, what did my endpoint answer?"). Scoped to the
 * authenticated business like every partner read (partner-reads.ts).
 */
/** The list's query: the API's, and the portal's filter form (through `readEventPage`). */
const EventQuery = listQuery({
  type: z.string().regex(EVENT_TYPE, 'An event type, e.g. sales-order.shipped').max(200).optional(),
  since: queryTime.optional(),
  until: queryTime.optional(),
});

/** An attempt as the partner sees it: where it went, how it ended, what the endpoint answered. */
export const attemptView = (attempt: AttemptEntry) => ({
  at: attempt.at.toISOString(),
  endpoint: attempt.endpoint,
  end: attempt.end,
  ...(attempt.status !== undefined && { status: attempt.status }),
  durationMs: attempt.durationMs,
  ...(attempt.responseExcerpt !== undefined && { responseExcerpt: attempt.responseExcerpt }),
  ...(attempt.error !== undefined && { error: attempt.error }),
});

/** An event as every partner answer names it: its id (`webhook-id`), type and times. */
export const eventSummary = (event: EventEntry) => ({
  id: event.id,
  type: event.type,
  ...(event.occurredAt && { occurredAt: event.occurredAt.toISOString() }),
  receivedAt: event.receivedAt.toISOString(),
});

const eventView = (event: EventWithAttempts) => ({
  ...eventSummary(event),
  ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
  data: event.payload,
  attempts: event.attempts.map(attemptView),
});

export function listEventsHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const page = await readEventPage(historyOf(deps, 'events'), { businessId }, event);
    return jsonResponse(
      200,
      {
        items: page.items.map(eventView),
        ...(page.next && { next: encodeCursor(page.next) }),
      },
      context,
      deps.responseHeaders,
    );
  };
}

const ResendQuery = z.strictObject({
  endpoint: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("one endpoint's id (`GET /api/v2/webhooks`)"),
});

/**
 * POST /api/v2/events/{id}/resend: one of the business's events, delivered or dead, sent again
 * with its original id (so its `webhook-id`) and a fresh signature — to every endpoint of the
 * business that takes its type now, or to the one `?endpoint=<id>` names. `202`: the delivery
 * queue has it (confirmed); its attempts show in `GET /api/v2/events` as they are made.
 */
export function resendEventHandler(deps: PartnerEventsDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const { endpoint } = readQuery(event, ResendQuery);
    const id = decoded(event.context.params?.id ?? '', 'id');
    const actions = actionsOf(deps);
    const endpoints = await resendEvent(
      historyOf(deps, 'events'),
      actions,
      actionAdmission(deps, context, true),
      { businessId },
      id,
      endpoint,
    );
    context.log.info({ eventId: id, endpoints }, 'partner API: event sent again');
    return jsonResponse(202, { eventId: id, endpoints }, context, deps.responseHeaders);
  };
}
