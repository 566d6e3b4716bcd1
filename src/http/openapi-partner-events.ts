import { ATTEMPT_ENDS } from '../vocabulary.js';
import { ATTEMPTS_PER_EVENT } from '../history/store.js';
import { ok, pageParameters, query, readResponses, ref, TAG } from './openapi-partner.js';
import { problem } from './openapi-responses.js';
import type { JsonSchema } from './openapi-schemas.js';

/**
 * The partner API's events in the OpenAPI document (partner-events.ts): the warehouse's events
 * about the business with their delivery attempts, with schemas and examples.
 */
const ATTEMPT_EXAMPLE = {
  at: '2026-03-02T15:40:01.304Z',
  endpoint: 'erp-prod',
  end: 'failed',
  status: 503,
  durationMs: 212,
  responseExcerpt: 'Service Unavailable',
};

const EVENT_EXAMPLE = {
  id: 'evt-2026-03-02-0042',
  type: 'sales-order.shipped',
  occurredAt: '2026-03-02T15:40:00.000Z',
  receivedAt: '2026-03-02T15:40:01.118Z',
  correlationId: 'order-import-2026-03-02-0001',
  data: { shipmentId: 'SO-2026-000187', carrier: 'DHL', trackingNumber: '00340434161094042557' },
  attempts: [
    ATTEMPT_EXAMPLE,
    { ...ATTEMPT_EXAMPLE, at: '2026-03-02T15:40:06.511Z', end: 'delivered', status: 200 },
  ],
};

export function partnerEventSchemas(): Record<string, JsonSchema> {
  return {
    DeliveryAttempt: {
      type: 'object',
      description: 'One delivery of an event to one of your endpoints.',
      required: ['at', 'endpoint', 'end', 'durationMs'],
      properties: {
        at: { type: 'string', format: 'date-time' },
        endpoint: {
          type: 'string',
          description: "The endpoint's id, or its URL where it has none (never a secret).",
        },
        end: {
          type: 'string',
          enum: [...ATTEMPT_ENDS],
          description:
            '`delivered`; `failed` (tried again later); `gone` (your endpoint answered 410: disabled); `rejected` (it can never take this event); `aborted` (it answered `webhook-delivery: abort-message`).',
        },
        status: { type: 'integer', description: 'The HTTP status your endpoint answered.' },
        durationMs: { type: 'integer', minimum: 0 },
        responseExcerpt: {
          type: 'string',
          maxLength: 1024,
          description: "The start of your endpoint's answer.",
        },
        error: {
          type: 'string',
          description: 'Why no answer came (a timeout, a refused connection).',
        },
      },
      example: ATTEMPT_EXAMPLE,
    },
    EventWithAttempts: {
      description: 'A warehouse event about your data, as the service received and delivered it.',
      allOf: [ref('EventSummary'), ref('EventDelivery')],
      example: EVENT_EXAMPLE,
    },
    EventDelivery: {
      type: 'object',
      required: ['data', 'attempts'],
      properties: {
        correlationId: {
          type: 'string',
          description: 'The batch it answers, when the warehouse named one.',
        },
        data: {
          description: "The webhook body's `data`: the event catalog gives each type's schema.",
        },
        attempts: {
          type: 'array',
          items: ref('DeliveryAttempt'),
          description: `Oldest first, the first ${ATTEMPTS_PER_EVENT}. Empty while none was made (no subscription matched, or its first attempt is due).`,
        },
      },
    },
    Webhook: {
      type: 'object',
      description:
        'One of your webhook endpoints: as configured, with its state and last attempts (from the history, when kept). Never a secret.',
      required: ['id', 'name', 'url', 'events', 'state'],
      properties: {
        id: {
          type: 'string',
          description: 'What `POST /api/v2/webhooks/{id}/test` and `?endpoint=` take.',
        },
        name: {
          type: 'string',
          description: 'Its configured id, or its URL: how attempts name it.',
        },
        url: { type: 'string', format: 'uri' },
        events: {
          type: 'array',
          items: { type: 'string' },
          description: 'The event types it takes (`*` within one part, `**` across parts).',
        },
        state: { type: 'string', enum: ['enabled', 'disabled'] },
        disabledBy: {
          type: 'string',
          enum: ['gone', 'operator'],
          description: '`gone`: it answered 410; `operator`: an operator disabled it.',
        },
        failingSince: { type: 'string', format: 'date-time' },
        delivered: { type: 'integer', minimum: 0, description: 'Attempts delivered, as kept.' },
        failed: { type: 'integer', minimum: 0, description: 'Attempts that did not deliver.' },
        lastAttempts: {
          type: 'array',
          description: 'Newest first, 5 at most.',
          items: {
            allOf: [
              ref('DeliveryAttempt'),
              { type: 'object', properties: { eventId: { type: 'string' } } },
            ],
          },
        },
      },
      example: {
        id: '3f9a1c0d2b7e4a51',
        name: 'erp-connector',
        url: 'https://connector.acme.example/warehouse-events',
        events: ['sales-order.*'],
        state: 'enabled',
        delivered: 41,
        failed: 2,
        lastAttempts: [
          { eventId: 'evt-2026-03-02-0042', ...ATTEMPT_EXAMPLE, end: 'delivered', status: 200 },
        ],
      },
    },
    WebhookPage: {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: ref('Webhook') } },
    },
    WebhookTest: {
      type: 'object',
      required: ['eventId', 'attempt'],
      properties: {
        eventId: { type: 'string', description: "The test event's id: its `webhook-id`." },
        attempt: ref('DeliveryAttempt'),
      },
      example: {
        eventId: 'test_9b2f0c1e-0d7a-4c8e-9f3e-2a6b5d4c3e21',
        attempt: {
          at: '2026-03-02T15:41:12.020Z',
          endpoint: 'erp-connector',
          end: 'delivered',
          status: 204,
          durationMs: 84,
        },
      },
    },
    Resent: {
      type: 'object',
      required: ['eventId', 'endpoints'],
      properties: {
        eventId: { type: 'string' },
        endpoints: {
          type: 'array',
          items: { type: 'string' },
          description: 'The endpoints (by name) it goes to.',
        },
      },
      example: { eventId: 'evt-2026-03-02-0042', endpoints: ['erp-connector'] },
    },
    EventPage: {
      type: 'object',
      required: ['items'],
      properties: {
        items: { type: 'array', items: ref('EventWithAttempts') },
        next: {
          type: 'string',
          description: 'Pass as `cursor` for the next page; absent on the last page.',
        },
      },
      example: { items: [EVENT_EXAMPLE] },
    },
  };
}

export function partnerEventPaths(): Record<string, unknown> {
  return {
    '/api/v2/events': {
      get: {
        tags: [TAG],
        operationId: 'list-events',
        summary: 'Events about your data, newest first, with their delivery attempts',
        description:
          "The warehouse's events about the authenticated business that the history keeps, newest first as the service received them, each with its delivery attempts to your endpoints.",
        parameters: [
          query('type', 'Only events of this type.', {
            type: 'string',
            example: 'sales-order.shipped',
          }),
          query('since', 'Received at or after (ISO 8601 with a zone).', {
            type: 'string',
            format: 'date-time',
          }),
          query('until', 'Received before (ISO 8601 with a zone).', {
            type: 'string',
            format: 'date-time',
          }),
          ...pageParameters('Events'),
        ],
        responses: {
          '200': ok('EventPage', 'A page of events.'),
          '400': problem(400, 'a query parameter is not one this list takes.', false, {}, [
            'invalid-query',
          ]),
          '404': problem(404, 'this service keeps no history.', false, {}, ['not-found']),
          ...readResponses(),
        },
      },
    },
    '/api/v2/events/{id}/resend': {
      post: {
        tags: [TAG],
        operationId: 'resend-event',
        summary: 'Send one of your events again',
        description:
          'Delivered or dead, the event goes to the delivery queue again with its original id (its `webhook-id`, so your receiver can deduplicate) and is signed afresh: to every endpoint of yours that takes its type now, or to the one `endpoint` names. `202` once the queue has it; its attempts appear in `GET /api/v2/events`.',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } },
          query('endpoint', 'Only this endpoint (its `id` from `GET /api/v2/webhooks`).', {
            type: 'string',
          }),
        ],
        responses: {
          '202': { ...ok('Resent', 'In the delivery queue.') },
          '400': problem(400, 'a query parameter is not one this route takes.', false, {}, [
            'invalid-query',
          ]),
          '404': problem(
            404,
            "no event of yours has this id (another business's answers the same), no endpoint of yours has that id, or no history is kept.",
            false,
            {},
            ['not-found'],
          ),
          '409': problem(409, 'none of your endpoints takes this event now.', false, {}, [
            'no-subscriber',
          ]),
          ...readResponses(),
        },
      },
    },
    '/api/v2/webhooks': {
      get: {
        tags: [TAG],
        operationId: 'list-webhooks',
        summary: 'Your webhook endpoints, their state and last attempts',
        responses: {
          '200': ok('WebhookPage', 'Your endpoints.'),
          '404': problem(404, 'this service delivers no events (no broker).', false, {}, [
            'not-found',
          ]),
          ...readResponses(),
        },
      },
    },
    '/api/v2/webhooks/{id}/test': {
      post: {
        tags: [TAG],
        operationId: 'test-webhook',
        summary: 'Send a test event to one of your endpoints now',
        description:
          "A `webhook.test` event, signed like every other, sent now whatever the endpoint's state (a test is how a fix is checked); the answer is its attempt. Kept in the history like any event.",
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } },
        ],
        responses: {
          '200': ok('WebhookTest', 'The attempt, delivered or not.'),
          '404': problem(
            404,
            "no endpoint of yours has this id (another business's answers the same), or no events are delivered.",
            false,
            {},
            ['not-found'],
          ),
          ...readResponses(),
        },
      },
    },
  };
}
