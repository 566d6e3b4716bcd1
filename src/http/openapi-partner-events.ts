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
      type: 'object',
      description: 'A warehouse event about your data, as the service received and delivered it.',
      required: ['id', 'type', 'receivedAt', 'data', 'attempts'],
      properties: {
        id: { type: 'string', description: 'The `webhook-id` it is delivered with.' },
        type: { type: 'string', example: 'sales-order.shipped' },
        occurredAt: { type: 'string', format: 'date-time' },
        receivedAt: { type: 'string', format: 'date-time' },
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
      example: EVENT_EXAMPLE,
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
  };
}
