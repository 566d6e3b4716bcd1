import type { H3Event } from 'h3';
import { NotFound } from '../errors.js';
import type { EventActions } from '../events/actions.js';
import type { EndpointActivity, EndpointStateEntry, HistoryStore } from '../history/store.js';
import { attemptView } from './partner-events.js';
import { actionsOf, decoded, type PartnerEventsDependencies } from './partner-reads.js';
import { type ActionAdmission, actionAdmission } from './admission.js';
import { jsonResponse, requestContext } from './respond.js';

/**
 * The business's webhook endpoints (GET /api/v2/webhooks) and a test event to one of them
 * (POST /api/v2/webhooks/{id}/test): what a connector developer needs while building the
 * receiving end, without asking the operator. The endpoints are the ones configured for the
 * business (never a secret); their state and last attempts come from the history when it is on.
 */
/** Newest first, as `endpointActivity` gives them. */
const LAST_ATTEMPTS = 5;

function stateView(state: EndpointStateEntry | undefined, activity: EndpointActivity | undefined) {
  return {
    state: state && !state.enabled ? 'disabled' : 'enabled',
    ...(state?.disabledBy && !state.enabled && { disabledBy: state.disabledBy }),
    ...(state?.failingSince && { failingSince: state.failingSince.toISOString() }),
    ...(activity && {
      delivered: activity.delivered,
      failed: activity.failed,
      lastAttempts: activity.lastAttempts.map((attempt) => ({
        eventId: attempt.eventId,
        ...attemptView(attempt),
      })),
    }),
  };
}

/** An endpoint as `GET /api/v2/webhooks` lists it (and the portal shows it). */
export type WebhookView = Awaited<ReturnType<typeof listWebhooks>>[number];

/** The business's endpoints with their filters, state and last attempts (the history's, when on). */
export async function listWebhooks(
  actions: EventActions,
  history: HistoryStore | undefined,
  businessId: string,
) {
  const endpoints = actions.endpoints(businessId);
  const scope = { businessId };
  const [states, activity] = history
    ? await Promise.all([
        history.endpointStates(scope),
        history.endpointActivity(scope, LAST_ATTEMPTS),
      ])
    : [[], []];
  return endpoints.map((endpoint) => ({
    ...endpoint,
    ...stateView(
      states.find((s) => s.endpoint === endpoint.name),
      activity.find((a) => a.endpoint === endpoint.name),
    ),
  }));
}

/**
 * A signed `webhook.test` event to one of the business's endpoints now (`EventActions.sendTest`),
 * answered with its event id and attempt; `NotFound` for an id the business lacks. Admitted first
 * (`admit`: the business's rate limit, and a bulkhead slot while the attempt runs).
 */
export async function sendTestEvent(
  actions: EventActions,
  admit: ActionAdmission,
  businessId: string,
  id: string,
) {
  const leave = await admit(businessId);
  let test: Awaited<ReturnType<EventActions['sendTest']>>;
  try {
    test = await actions.sendTest(businessId, id);
  } finally {
    leave();
  }
  if (!test)
    throw new NotFound({
      detail: `No webhook endpoint of yours has id ${JSON.stringify(id.slice(0, 100))}: GET /api/v2/webhooks lists them.`,
    });
  return { eventId: test.eventId, attempt: attemptView(test) };
}

/** GET /api/v2/webhooks: each endpoint with its filters, state and last attempts. */
export function listWebhooksHandler(deps: PartnerEventsDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const items = await listWebhooks(actionsOf(deps), deps.history, businessId);
    return jsonResponse(200, { items }, context, deps.responseHeaders);
  };
}

/** POST /api/v2/webhooks/{id}/test: a signed `webhook.test` event now, answered with its attempt. */
export function testWebhookHandler(deps: PartnerEventsDependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.admission.admit(event, context);
    const id = decoded(event.context.params?.id ?? '', 'id');
    const test = await sendTestEvent(
      actionsOf(deps),
      actionAdmission(deps, context, true),
      businessId,
      id,
    );
    context.log.info(
      { endpoint: id, end: test.attempt.end },
      'partner API: test event sent to an endpoint',
    );
    return jsonResponse(200, test, context, deps.responseHeaders);
  };
}
