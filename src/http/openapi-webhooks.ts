/**
 * The `webhooks` of /openapi.json: one per event type of the event catalog (src/events/catalog/),
 * the request the service POSTs to a business's endpoint, with the Standard Webhooks headers and
 * the answers it acts on (docs/events.md "Delivery").
 */
import { CATALOG_TYPES } from '../events/catalog/index.js';
import { bodyJsonSchema, exampleBody, type JsonSchema } from '../events/catalog/json-schema.js';

const string = { type: 'string' } as const;

export const WEBHOOK_PARAMETERS = {
  WebhookId: {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description:
      'The event id: the same on every retry and every duplicate of the event. Deduplicate on it (delivery is at least once).',
    schema: string,
    example: '6f1c0e1a-3b9d-4c55-9a51-1d8a2f4b7c10',
  },
  WebhookTimestamp: {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description:
      'POSIX seconds of this attempt (not of the event): reject a delivery whose timestamp is too far from your clock.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
    example: '1795452541',
  },
  WebhookSignature: {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the bytes of the endpoint\'s secret (base64 after `whsec_`); two, space-separated, while the secret is rotated: accept the delivery if either verifies. Any Standard Webhooks library verifies it.',
    schema: string,
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
} as const;

/** `sales-order.shipped` → `SalesOrderShippedEvent`. */
export const eventSchemaName = (type: string) =>
  `${type.replace(/(^|[-.])(\w)/g, (_m, _d: string, c: string) => c.toUpperCase())}Event`;

/** The webhook bodies as components (`SalesOrderShippedEvent` …). */
export function webhookSchemas(): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.values(CATALOG_TYPES).map((entry) => {
      // The dialect and the example stay out: the component is in the document's dialect, and
      // the example is the request's.
      const { $schema: _dialect, examples: _examples, ...schema } = bodyJsonSchema(entry);
      return [eventSchemaName(entry.type), schema];
    }),
  );
}

const parameter = (name: keyof typeof WEBHOOK_PARAMETERS) => ({
  $ref: `#/components/parameters/${name}`,
});

export function webhooks(): Record<string, unknown> {
  return Object.fromEntries(
    Object.values(CATALOG_TYPES).map((entry) => [
      entry.type,
      {
        post: {
          tags: ['Events (webhooks)'],
          operationId: `webhook-${entry.type.replaceAll('.', '-')}`,
          summary: entry.description,
          description: entry.operator
            ? `What the service POSTs to the operator webhook (\`events.operatorWebhook\`, never a business's endpoint) as a \`${entry.type}\` event, for the business \`warehouse-ingest:operator\`. Signed with the operator webhook's secret; retried like any event.`
            : `What the service POSTs to a business's endpoint when the warehouse sends a \`${entry.type}\` event (endpoints subscribe per tenant in the configuration, \`tenants[].webhooks\`). Signed with the endpoint's secret; retried on the endpoint's schedule until it answers 2xx.`,
          security: [],
          parameters: [
            parameter('WebhookId'),
            parameter('WebhookTimestamp'),
            parameter('WebhookSignature'),
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: { $ref: `#/components/schemas/${eventSchemaName(entry.type)}` },
                examples: { example: { summary: entry.description, value: exampleBody(entry) } },
              },
            },
          },
          responses: {
            '200': {
              description:
                'Delivered: any 2xx within `events.deliveryTimeoutMs`. The answer body is ignored.',
            },
            '410': {
              description:
                'Gone: the endpoint is disabled (this event and later ones are dead-lettered, replayable once it is back). Any other answer, a redirect or no answer in time is a failed attempt, retried.',
            },
          },
        },
      },
    ]),
  );
}
