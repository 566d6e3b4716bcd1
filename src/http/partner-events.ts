import type { H3Event } from 'h3';
import { z } from 'zod';
import { EVENT_ID, EVENT_TYPE } from '../events/event.js';
import type { AttemptEntry, EventWithAttempts } from '../history/store.js';
import {
  encodeCursor,
  historyOf,
  listQuery,
  type PartnerReadDependencies,
  queryTime,
  readListQuery,
} from './partner-reads.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * GET /api/v2/events: the warehouse's events about the business, newest first as the service
 * received them, each with its delivery attempts — what a connector developer asks when a
 * delivery failed ("did you send it, what did my endpoint answer?"). Scoped to the
 * authenticated business like every partner read (partner-reads.ts).
 */
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

const eventView = (event: EventWithAttempts) => ({
  id: event.id,
  type: event.type,
  ...(event.occurredAt && { occurredAt: event.occurredAt.toISOString() }),
  receivedAt: event.receivedAt.toISOString(),
  ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
  data: event.payload,
  attempts: event.attempts.map(attemptView),
});

export function listEventsHandler(deps: PartnerReadDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const { filter, limit, after } = readListQuery(event, EventQuery, (id) => EVENT_ID.test(id));
    const page = await historyOf(deps).listEvents({ businessId }, filter, {
      limit,
      ...(after && { after }),
    });
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
