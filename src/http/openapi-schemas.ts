/**
 * The JSON Schemas the OpenAPI document is made of, all derived from what the service itself
 * uses: each kind's zod schema, the legacy mapping tables (v1 JSON and CSV), and zod schemas of
 * the two answer bodies whose TypeScript types live with the code that builds them.
 */
import { z } from 'zod';
import type { CsvField, CsvLayout } from '../decode/csv.js';
import type { BulkResponse } from '../ingest/batch.js';
import type { LegacyConverter } from '../records/legacy/converter.js';
import type { RecordKind } from '../records/kind.js';
import { FIELD_NOTES } from './openapi-field-notes.js';

export type JsonSchema = Record<string, unknown>;

export const bulkResponseSchema = z.strictObject({
  success: z.literal(true).meta({ description: 'Always `true` on a `202`.' }),
  recordCount: z.int().min(1).meta({ description: 'Records accepted (v1: v2 records produced).' }),
  messageIds: z
    .array(z.string())
    .meta({ description: 'One per record, in order; stable across retries of the same batch.' }),
  correlationId: z
    .string()
    .meta({ description: 'The x-correlation-id sent, or a generated UUID.' }),
  ignoredFields: z.array(z.string()).optional().meta({
    description:
      "v1 only, when the business's onboarding profile says to ignore unknown fields and some were sent: their names (JSON: `Field`, `rOrderLines[].Field`; CSV: the column), at most 100. Absent otherwise.",
  }),
});

// Fails to compile when the documented body drifts from the one ingest() returns.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type BulkResponseIsDocumented =
  Same<z.infer<typeof bulkResponseSchema>, BulkResponse> extends true ? true : never;

const recordErrors = z.strictObject({
  index: z.int().min(0).meta({
    description:
      'Position of the failing record in the batch (v1: of the legacy order or product).',
  }),
  errors: z.array(z.string()).meta({
    description:
      'Every failing field as `<path>: <message>`, e.g. `shipmentLines[0].quantities.ordered: Required`.',
  }),
});

export const problemSchema = z.looseObject({
  type: z.string().meta({
    description:
      'Relative URI reference, e.g. `/problems/validation-failed`; resolved against the service it is a page saying what it means. The stable thing to branch on.',
  }),
  title: z.string().meta({ description: 'The HTTP reason phrase.' }),
  status: z.int().meta({ description: 'The HTTP status, as on the status line.' }),
  detail: z
    .string()
    .optional()
    .meta({ description: 'What went wrong with this request, for a person to read.' }),
  instance: z.string().optional().meta({ description: 'The request path.' }),
  errors: z
    .array(z.union([recordErrors, z.strictObject({ path: z.string(), message: z.string() })]))
    .optional()
    .meta({ description: 'On 400 validation-failed: one entry per failing record.' }),
});

export const readyBodySchema = z.strictObject({
  status: z.literal('ready'),
  drops: z
    .optional(
      z.array(
        z.strictObject({
          pipeline: z.string(),
          source: z.string(),
          reachable: z.boolean(),
          ms: z.number(),
          problem: z.string().optional(),
        }),
      ),
    )
    .meta({ description: 'One entry per configured drop; absent when there are none.' }),
});

/** zod → JSON Schema 2020-12, the dialect of OpenAPI 3.1 (so the `$schema` line is dropped). */
export function jsonSchema(schema: z.ZodType, description?: string): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  return description ? { description, ...rest } : rest;
}

export function recordSchema(kind: RecordKind): JsonSchema {
  const schema = jsonSchema(
    kind.schema,
    `A ${kind.label} (v2). Fields not listed pass through unchanged.`,
  );
  for (const [path, note] of Object.entries(FIELD_NOTES[kind.name] ?? {})) {
    const field = fieldAt(schema, path.split('.'));
    // A note for a field the schema lacks is a drift between the spec's tables and the code.
    if (!field) throw new Error(`openapi: ${kind.name} has no field ${path} to describe`);
    field.description = note;
  }
  return schema;
}

/** The JSON Schema of a dotted path in a record schema (arrays are passed through to their items). */
function fieldAt(schema: JsonSchema, path: readonly string[]): JsonSchema | undefined {
  let at: JsonSchema | undefined = schema;
  for (const key of path) {
    if (at?.type === 'array') at = at.items as JsonSchema | undefined;
    at = (at?.properties as Record<string, JsonSchema> | undefined)?.[key];
  }
  return at;
}

const fieldSchema = (field: CsvField): JsonSchema =>
  field.type === 'number'
    ? { type: 'number' }
    : field.type === 'date'
      ? {
          type: 'string',
          description:
            'Date or date-time, e.g. 2026-02-03, 2026-02-03T14:30, 2026-02-03T14:30:05+01:00 (no zone: UTC).',
        }
      : { type: 'string' };

function objectOf(
  fields: readonly CsvField[],
  nested: Record<string, JsonSchema> = {},
): JsonSchema {
  return {
    type: 'object',
    properties: { ...Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])), ...nested },
    additionalProperties: false,
  };
}

/** `{ "<root>": [ legacy records ] }`, from the same mapping table that converts it. */
export function legacyJsonSchema(converter: LegacyConverter): JsonSchema {
  const { header, lines } = converter.csv;
  const parts = lines?.parts
    ? { [lines.parts.name]: { type: 'array', items: objectOf(lines.parts.fields) } }
    : {};
  const item = objectOf(
    header,
    lines ? { [lines.name]: { type: 'array', items: objectOf(lines.fields, parts) } } : {},
  );
  return {
    description: `The v1 ${converter.kind} shape. Unknown fields are refused.`,
    type: 'object',
    properties: { [converter.root]: { type: 'array', items: item } },
    required: [converter.root],
    additionalProperties: false,
  };
}

/** The CSV columns, in the order a header row lists them. */
export function csvColumns(layout: CsvLayout): string[] {
  const columns = layout.header.map((f) => f.name);
  if (layout.lines)
    columns.push(...layout.lines.fields.map((f) => `${layout.lines!.name}_${f.name}`));
  if (layout.lines?.parts)
    columns.push(...layout.lines.parts.fields.map((f) => `${layout.lines!.parts!.name}_${f.name}`));
  return columns;
}

export function legacyCsvSchema(converter: LegacyConverter): JsonSchema {
  const columns = csvColumns(converter.csv);
  return {
    type: 'string',
    description:
      `UTF-8 CSV: a header row with every one of these columns, then one row per ${converter.csv.lines ? 'line' : 'record'}` +
      `${converter.csv.groupBy ? ` (rows of one ${converter.csv.groupBy} contiguous, their header values equal)` : ''}: ${columns.join(', ')}.`,
    examples: [`${columns.join(',')}\n`],
  };
}
