import { readFileSync } from 'node:fs';
import { KINDS } from '../records/index.js';
import { LEGACY } from '../records/legacy/index.js';
import {
  bulkResponseSchema,
  jsonSchema,
  legacyCsvSchema,
  legacyJsonSchema,
  problemSchema,
  readyBodySchema,
  recordSchema,
  type JsonSchema,
} from './openapi-schemas.js';

/**
 * GET /openapi.json: OpenAPI 3.1, built once from the schemas the service validates with, so
 * the document cannot drift from the code. test/ops/openapi.test.ts checks that every route
 * of the app is in it and that it is valid OpenAPI 3.1.
 */
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
  headers: { 'x-correlation-id': { $ref: '#/components/headers/CorrelationId' } },
});
const PROBLEMS = {
  '400': problem(
    '`/problems/validation-failed`: `errors` lists every failing record; or `/problems/malformed-body`. Nothing is accepted.',
  ),
  '401': problem(
    '`/problems/unauthorized`: credentials missing or wrong (`WWW-Authenticate: Basic`).',
  ),
  '405': problem('`/problems/method-not-allowed`; `Allow` names the method.'),
  '413': problem(
    '`/problems/payload-too-large`: body or record count over the limit stated in `detail`.',
  ),
  '415': problem('`/problems/unsupported-media-type`.'),
  '500': problem('`/problems/internal-error`: a bug; the body says only that it was logged.'),
  '503': problem(
    '`/problems/publish-failed`: the broker did not confirm every message. Nothing is accepted; retrying is safe (same message ids). `Retry-After` is set.',
  ),
};
const accepted = {
  description: 'Every record passed and the broker confirmed every message.',
  content: { 'application/json': { schema: ref('BulkResponse') } },
  headers: { 'x-correlation-id': { $ref: '#/components/headers/CorrelationId' } },
};
const correlation = { $ref: '#/components/parameters/CorrelationId' };
const schemaName = (kind: string, suffix = '') =>
  `${kind.replace(/(^|-)(\w)/g, (_m, _d: string, c: string) => c.toUpperCase())}${suffix}`;
const open = (
  summary: string,
  description: string,
  responses: Record<string, unknown>,
  tag = 'Operations',
) => ({ get: { tags: [tag], summary, description, security: [], responses } });

function paths(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kind of Object.values(KINDS)) {
    out[`/api/v2/${kind.name}`] = {
      post: {
        tags: ['v2'],
        operationId: `post-v2-${kind.name}`,
        summary: `Send a batch of ${kind.label}s`,
        description: `A JSON array of ${kind.label}s, validated all-or-nothing. \`202\` only after the broker confirmed every message.`,
        parameters: [correlation],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'array', minItems: 1, items: ref(schemaName(kind.name)) },
            },
          },
        },
        responses: { '202': accepted, ...PROBLEMS },
      },
    };
  }
  for (const kind of Object.values(KINDS)) {
    if (!LEGACY[kind.name]) continue;
    out[`/api/v1/${kind.name}`] = {
      post: {
        tags: ['v1 (deprecated)'],
        operationId: `post-v1-${kind.name}`,
        deprecated: true,
        summary: `Send ${kind.label}s in the v1 shape (JSON or CSV)`,
        description: `Converted to v2 ${kind.label}s (fields v1 lacks come from the onboarding profile) and handled like \`POST /api/v2/${kind.name}\`. Errors name the legacy path, or the CSV line and column. Answers carry \`Deprecation\` and a \`Link\` to the successor.`,
        parameters: [correlation],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: ref(schemaName(kind.name, 'V1')) },
            'text/csv': { schema: ref(schemaName(kind.name, 'V1Csv')) },
          },
        },
        responses: { '202': accepted, ...PROBLEMS },
      },
    };
  }
  out['/api/v1/customer/{accountId}/stock'] = {
    get: {
      tags: ['v1 (deprecated)'],
      operationId: 'get-v1-stock',
      deprecated: true,
      summary: 'Stock snapshot (not available)',
      description: 'Always `501` (no stock source is connected), the same for every account id.',
      parameters: [
        { name: 'accountId', in: 'path', required: true, schema: { type: 'string' } },
        correlation,
      ],
      responses: { '501': problem('`/problems/not-implemented`.'), '401': PROBLEMS['401'] },
    },
  };
  out['/healthz'] = open('Liveness', 'The process runs.', {
    '200': {
      description: 'Alive.',
      content: {
        'application/json': {
          schema: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] },
        },
      },
    },
  });
  // /readyz and /metrics are on the admin listener (admin.host, admin.port), not in the partners' API.
  out['/openapi.json'] = open(
    'This document',
    'OpenAPI 3.1, generated from the schemas the service validates with.',
    {
      '200': {
        description: 'The document.',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
    },
    'Documentation',
  );
  out['/docs'] = open(
    'API reference',
    'This document rendered for reading (Swagger UI, served locally).',
    {
      '200': {
        description: 'HTML page.',
        content: { 'text/html': { schema: { type: 'string' } } },
      },
    },
    'Documentation',
  );
  out['/docs/{asset}'] = {
    get: {
      ...open(
        'API reference assets',
        'Scripts and styles of the reference page.',
        { '200': { description: 'The asset.' }, '404': problem('`/problems/not-found`.') },
        'Documentation',
      ).get,
      parameters: [{ name: 'asset', in: 'path', required: true, schema: { type: 'string' } }],
    },
  };
  return out;
}

function schemas(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {
    BulkResponse: jsonSchema(bulkResponseSchema, 'The `202` body (spec §2.1).'),
    Problem: jsonSchema(problemSchema, 'Problem details (RFC 9457, spec §2.2).'),
    Ready: jsonSchema(readyBodySchema, 'The `200` body of /readyz.'),
  };
  for (const kind of Object.values(KINDS)) {
    out[schemaName(kind.name)] = recordSchema(kind);
    const converter = LEGACY[kind.name];
    if (!converter) continue;
    out[schemaName(kind.name, 'V1')] = legacyJsonSchema(converter);
    out[schemaName(kind.name, 'V1Csv')] = legacyCsvSchema(converter);
  }
  return out;
}

let built: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  return (built ??= {
    openapi: '3.1.1',
    info: {
      title: 'warehouse-ingest',
      version: VERSION,
      description:
        'Takes in batches of business records (master data, sales orders, purchase orders, return goods, work orders), validates each batch all-or-nothing and publishes it to RabbitMQ. `202` means the broker confirmed every message.',
    },
    servers: [{ url: '/' }],
    security: [{ basicAuth: [] }],
    tags: [
      { name: 'v2' },
      { name: 'v1 (deprecated)' },
      { name: 'Operations' },
      { name: 'Documentation' },
    ],
    paths: paths(),
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'User-id: the business id. Password: its API key.',
        },
      },
      parameters: {
        CorrelationId: {
          name: 'x-correlation-id',
          in: 'header',
          required: false,
          description:
            '1–128 printable ASCII characters without spaces; otherwise a UUID is generated.',
          schema: { type: 'string' },
        },
      },
      headers: {
        CorrelationId: { description: "The request's correlation id.", schema: { type: 'string' } },
      },
      schemas: schemas(),
    },
  });
}
