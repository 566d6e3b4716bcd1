import { HISTORY_BATCH_OUTCOMES } from '../vocabulary.js';
import { KIND_NAMES } from '../records/kind.js';
import { MESSAGE_IDS_SHOWN } from './partner-batches.js';
import { batchResponses, problem } from './openapi-responses.js';
import type { JsonSchema } from './openapi-schemas.js';

/**
 * The partner API's reads in the OpenAPI document (partner-batches.ts): a business's own
 * batches from the history, with their schemas and examples.
 */
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const TAG = 'Partner API (history)';

const EXAMPLE = {
  correlationId: 'order-import-2026-03-02-0001',
  receivedAt: '2026-03-02T09:14:07.212Z',
  source: { endpoint: '/api/v2/sales-orders' },
  kind: 'sales-orders',
  outcome: 'accepted',
  recordCount: 2,
};

export function partnerSchemas(): Record<string, JsonSchema> {
  return {
    BatchSource: {
      description: 'An HTTP endpoint, or a pipeline and the name of the file dropped there.',
      oneOf: [
        {
          type: 'object',
          required: ['endpoint'],
          properties: { endpoint: { type: 'string', example: '/api/v2/sales-orders' } },
        },
        {
          type: 'object',
          required: ['pipeline', 'fileName'],
          properties: { pipeline: { type: 'string' }, fileName: { type: 'string' } },
        },
      ],
    },
    Batch: {
      type: 'object',
      description:
        'A batch as the history keeps it: an HTTP request, or one try of a dropped file that settled it.',
      required: ['correlationId', 'receivedAt', 'source', 'kind', 'outcome', 'recordCount'],
      properties: {
        correlationId: { type: 'string', description: 'What its answer or receipt named.' },
        receivedAt: { type: 'string', format: 'date-time' },
        source: ref('BatchSource'),
        kind: { type: 'string', enum: [...KIND_NAMES] },
        outcome: { type: 'string', enum: [...HISTORY_BATCH_OUTCOMES] },
        recordCount: {
          type: 'integer',
          minimum: 0,
          description: 'Records accepted; 0 for a refused HTTP batch.',
        },
        problem: { ...ref('Problem'), description: 'The problem details a refusal answered.' },
        receipt: { type: 'object', description: "A dropped file's receipt." },
      },
      example: EXAMPLE,
    },
    BatchPage: {
      type: 'object',
      required: ['items'],
      properties: {
        items: { type: 'array', items: ref('Batch') },
        next: {
          type: 'string',
          description: 'Pass as `cursor` for the next page; absent on the last page.',
        },
      },
      example: { items: [EXAMPLE], next: 'MTc3MjQ0MjQ0NzIxMi4xYjk0Y2JmNi0uLi4' },
    },
    EventSummary: {
      type: 'object',
      description: 'A warehouse event: its id, type and times.',
      required: ['id', 'type', 'receivedAt'],
      properties: {
        id: { type: 'string', description: 'The `webhook-id` it is delivered with.' },
        type: { type: 'string', example: 'sales-order.shipped' },
        occurredAt: { type: 'string', format: 'date-time' },
        receivedAt: { type: 'string', format: 'date-time' },
      },
    },
    RecordHistory: {
      type: 'object',
      required: ['kind', 'key', 'state', 'batches', 'events'],
      properties: {
        kind: { type: 'string', enum: [...KIND_NAMES] },
        key: { type: 'string' },
        state: {
          type: 'string',
          description: '`accepted`, or the type of the latest event the warehouse sent about it.',
        },
        batches: {
          type: 'array',
          description: 'Newest first, 100 at most.',
          items: {
            type: 'object',
            required: ['correlationId', 'receivedAt', 'source', 'messageId', 'index'],
            properties: {
              correlationId: { type: 'string' },
              receivedAt: { type: 'string', format: 'date-time' },
              source: ref('BatchSource'),
              messageId: { type: 'string', format: 'uuid' },
              index: { type: 'integer', minimum: 0, description: 'Its position in the batch.' },
              line: { type: 'integer', minimum: 1, description: 'Its first line in a CSV file.' },
            },
          },
        },
        events: {
          type: 'array',
          description: 'Oldest first, 100 at most.',
          items: ref('EventSummary'),
        },
      },
      example: {
        kind: 'sales-orders',
        key: 'SO-2026-000187',
        state: 'sales-order.shipped',
        batches: [
          {
            correlationId: 'order-import-2026-03-02-0001',
            receivedAt: '2026-03-02T09:14:07.212Z',
            source: { endpoint: '/api/v2/sales-orders' },
            messageId: '0d9f2b0e-4a36-4f8e-9c49-8b1f7e0f4a11',
            index: 0,
          },
        ],
        events: [
          {
            id: 'evt-2026-03-02-0042',
            type: 'sales-order.shipped',
            occurredAt: '2026-03-02T15:40:00.000Z',
            receivedAt: '2026-03-02T15:40:01.118Z',
          },
        ],
      },
    },
    BatchDetail: {
      allOf: [
        ref('Batch'),
        {
          type: 'object',
          required: ['messageIds'],
          properties: {
            messageIds: {
              type: 'array',
              items: { type: 'string', format: 'uuid' },
              description: `Its records' message ids in batch order, the first ${MESSAGE_IDS_SHOWN}.`,
            },
            messageIdsTruncated: {
              type: 'boolean',
              description: `Present (true) when the batch has more than ${MESSAGE_IDS_SHOWN} records.`,
            },
            earlier: {
              type: 'array',
              items: ref('Batch'),
              description:
                'Earlier entries under the same correlation id (a file tried again), newest first.',
            },
          },
        },
      ],
      example: {
        ...EXAMPLE,
        messageIds: [
          '0d9f2b0e-4a36-4f8e-9c49-8b1f7e0f4a11',
          '5f3c8d2a-1b7e-4c9d-a2f6-3e8b9c0d1e2f',
        ],
      },
    },
  };
}

export const query = (name: string, description: string, schema: Record<string, unknown>) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

/** The answers every partner read shares: credentials, rate limit, the history unreadable. */
export function readResponses(): Record<string, unknown> {
  const { '401': unauthorized, '429': tooMany } = batchResponses(false);
  return {
    '401': unauthorized,
    '429': tooMany,
    '503': problem(
      503,
      'the history cannot be read just now; batches are still taken.',
      false,
      { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
      ['history-unavailable', 'shutting-down'],
    ),
  };
}

/** A `200` with a JSON body of schema `schema`. */
export const ok = (schema: string, description: string) => ({
  description,
  headers: { 'x-correlation-id': { $ref: '#/components/headers/CorrelationId' } },
  content: { 'application/json': { schema: ref(schema) } },
});

/** `limit` and `cursor`, which every list takes. */
export const pageParameters = (items: string) => [
  query('limit', `${items} per page.`, {
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 25,
  }),
  query('cursor', '`next` of the previous page, as it was given.', { type: 'string' }),
];

export function partnerPaths(): Record<string, unknown> {
  const reads = readResponses();
  return {
    '/api/v2/batches': {
      get: {
        tags: [TAG],
        operationId: 'list-batches',
        summary: 'Your batches, newest first',
        description:
          'Every batch of the authenticated business the history keeps (HTTP requests and dropped files, accepted or refused), a page at a time.',
        parameters: [
          query('since', 'Received at or after (ISO 8601 with a zone).', {
            type: 'string',
            format: 'date-time',
          }),
          query('until', 'Received before (ISO 8601 with a zone).', {
            type: 'string',
            format: 'date-time',
          }),
          query('outcome', 'Only batches with this outcome.', {
            type: 'string',
            enum: [...HISTORY_BATCH_OUTCOMES],
          }),
          query('kind', 'Only batches of this record kind.', {
            type: 'string',
            enum: [...KIND_NAMES],
          }),
          query('source', "An HTTP endpoint's path, or a pipeline's name.", {
            type: 'string',
            maxLength: 512,
          }),
          ...pageParameters('Batches'),
        ],
        responses: {
          '200': ok('BatchPage', 'A page of batches.'),
          '400': problem(400, 'a query parameter is not one this list takes.', false, {}, [
            'invalid-query',
          ]),
          '404': problem(404, 'this service keeps no history.', false, {}, ['not-found']),
          ...reads,
        },
      },
    },
    '/api/v2/records/{kind}/{key}': recordPath(reads),
    '/api/v2/batches/{correlationId}': {
      get: {
        tags: [TAG],
        operationId: 'get-batch',
        summary: 'One of your batches, by the correlation id its answer named',
        parameters: [
          {
            name: 'correlationId',
            in: 'path',
            required: true,
            schema: { type: 'string', minLength: 1, maxLength: 128 },
            example: 'order-import-2026-03-02-0001',
          },
        ],
        responses: {
          '200': ok('BatchDetail', 'The batch, with its message ids.'),
          '404': problem(
            404,
            "no batch of yours has this correlation id (another business's answers the same), or no history is kept.",
            false,
            {},
            ['not-found'],
          ),
          ...reads,
        },
      },
    },
  };
}

/** GET /api/v2/records/{kind}/{key} (partner-records.ts). */
function recordPath(reads: Record<string, unknown>) {
  return {
    get: {
      tags: [TAG],
      operationId: 'get-record',
      summary: 'One of your records, by its own number',
      description:
        "The batches that carried it (each with the message id it got), the warehouse's events about it, and its state: `accepted`, then the type of the latest event about it.",
      parameters: [
        {
          name: 'kind',
          in: 'path',
          required: true,
          schema: { type: 'string', enum: [...KIND_NAMES] },
          example: 'sales-orders',
        },
        {
          name: 'key',
          in: 'path',
          required: true,
          description: "The record's own number (a sales order's `identifiers.shipmentId`, …).",
          schema: { type: 'string', minLength: 1 },
          example: 'SO-2026-000187',
        },
      ],
      responses: {
        '200': ok('RecordHistory', 'The record, its batches and events.'),
        '404': problem(
          404,
          "no accepted record of yours of this kind has this number (another business's answers the same), the kind is unknown, or no history is kept.",
          false,
          {},
          ['not-found'],
        ),
        ...reads,
      },
    },
  };
}

export const PARTNER_TAG = {
  name: TAG,
  description: "What the history keeps of the authenticated business's own batches.",
};
