/**
 * The webhook body of each catalog type as a zod schema and as JSON Schema: what
 * docs/events/schemas/<type>.json and the OpenAPI `webhooks` publish. The body is the one
 * `webhookBody` (event.ts) renders; test/events/catalog.test.ts checks that every field it
 * renders is declared here, so the two cannot drift apart.
 */
import { z } from 'zod';
import { webhookBody } from '../event.js';
import { CATALOG_TYPES, type EventType } from './index.js';

export type JsonSchema = Record<string, unknown>;

/** The body of a webhook of this type (the outbound JSON file's, with `id` first). */
export function bodySchema(entry: EventType) {
  return z
    .looseObject({
      id: z.string().min(1).optional().meta({
        description:
          'The event id, only in outbound JSON files; a webhook carries it as the `webhook-id` header.',
      }),
      type: z.literal(entry.type).meta({ description: 'The event type.' }),
      timestamp: z.iso.datetime().meta({
        description: 'When it happened (ISO 8601, UTC, milliseconds); not the time of the attempt.',
      }),
      businessId: z.string().min(1).meta({
        description: 'The business the event is for (one connector may serve several).',
      }),
      data: entry.data.meta({ description: entry.description }),
      correlationId: z.string().min(1).optional().meta({
        description: "The ingest batch's correlation id, when the warehouse sent it.",
      }),
      messageIds: z.array(z.string()).optional().meta({
        description:
          'The message ids of the ingested records the event answers, when the warehouse sent them.',
      }),
    })
    .meta({
      title: `${entry.type} webhook body`,
      description: `${entry.description} Fields not listed may appear: ignore what you do not know.`,
    });
}

/** The example body of a type: its example `data` in the body `webhookBody` renders. */
export function exampleBody(entry: EventType): Record<string, unknown> {
  return webhookBody({
    id: 'evt-1',
    type: entry.type,
    businessId: 'ACME',
    occurredAt: new Date('2026-11-23T16:49:01.000Z'),
    data: entry.example as Record<string, unknown>,
    correlationId: 'batch-7',
    messageIds: ['m-1', 'm-2'],
  });
}

/** The JSON Schema (draft 2020-12) of a type's webhook body, with its example. */
export function bodyJsonSchema(entry: EventType): JsonSchema {
  const schema = z.toJSONSchema(bodySchema(entry), {
    io: 'input',
    target: 'draft-2020-12',
    // zod spells out ISO 8601 as a regular expression too; `format` says it to a reader.
    override: ({ jsonSchema }) => {
      if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
    },
  });
  return { ...schema, examples: [exampleBody(entry)] };
}

/** Every catalog type's body JSON Schema, by type. */
export function bodyJsonSchemas(): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.values(CATALOG_TYPES).map((entry) => [entry.type, bodyJsonSchema(entry)]),
  );
}
