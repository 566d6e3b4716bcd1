import { readFileSync } from 'node:fs';
import { KINDS } from '../records/index.js';
import { LEGACY } from '../records/legacy/index.js';
import {
  bulkResponseSchema,
  jsonSchema,
  legacyCsvSchema,
  legacyJsonSchema,
  problemSchema,
  recordSchema,
  type JsonSchema,
} from './openapi-schemas.js';
import { batchResponses, HEADERS, openResponses, PARAMETERS } from './openapi-responses.js';
import { requestExamples } from './openapi-examples.js';
import { PARTNER_TAG, partnerPaths, partnerSchemas } from './openapi-partner.js';
import { partnerEventPaths, partnerEventSchemas } from './openapi-partner-events.js';
import { WEBHOOK_PARAMETERS, webhookSchemas, webhooks } from './openapi-webhooks.js';

/**
 * GET /openapi.json: OpenAPI 3.1, built from the schemas the service validates with, so the
 * document cannot drift from the code. test/ops/openapi.test.ts checks that every route of the
 * app is in it and that it is valid OpenAPI 3.1; test/http/openapi-lint.test.ts lints it with
 * Redocly's recommended rules and generates a typed client from it.
 */
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** The interface description's version (docs/interface.md §9): what a partner's client is written against. */
export const INTERFACE_VERSION = '1.0';

export interface OpenApiOptions {
  /**
   * The URLs partners reach the service at (`http.publicUrls`), as `servers`. @default the
   * document's own origin (`/`)
   */
  readonly servers?: readonly string[];
  /**
   * Whether the public demo credential `DEMO` / `demo-api-key` is accepted here (the demo tenant is
   * configured): only then does the description tell readers to authorize with it. @default false
   */
  readonly demoCredential?: boolean;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const parameter = (name: keyof typeof PARAMETERS) => ({ $ref: `#/components/parameters/${name}` });
const batchParameters = [
  parameter('IdempotencyKey'),
  parameter('CorrelationId'),
  parameter('Traceparent'),
];
const schemaName = (kind: string, suffix = '') =>
  `${kind.replace(/(^|-)(\w)/g, (_m, _d: string, c: string) => c.toUpperCase())}${suffix}`;
const open = (
  operationId: string,
  summary: string,
  description: string,
  responses: Record<string, unknown>,
  tag = 'Operations',
) => ({
  get: {
    tags: [tag],
    operationId,
    summary,
    description,
    security: [],
    responses: { ...responses, ...openResponses },
  },
});

function paths(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kind of Object.values(KINDS)) {
    out[`/api/v2/${kind.name}`] = {
      post: {
        tags: ['v2'],
        operationId: `post-v2-${kind.name}`,
        summary: `Send a batch of ${kind.label}s`,
        description: `A JSON array of ${kind.label}s, validated all-or-nothing. \`202\` only after the broker confirmed every message.`,
        parameters: batchParameters,
        requestBody: {
          required: true,
          description: `1 to \`http.maxRecordsPerBatch\` ${kind.label}s of the authenticated business.`,
          content: {
            'application/json': {
              schema: { type: 'array', minItems: 1, items: ref(schemaName(kind.name)) },
              ...requestExamples(kind.name, kind.label, 'v2'),
            },
          },
        },
        responses: batchResponses(false),
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
        parameters: batchParameters,
        requestBody: {
          required: true,
          description: `${kind.label}s in the v1 shape: a JSON object, or CSV with a header row.`,
          content: {
            'application/json': {
              schema: ref(schemaName(kind.name, 'V1')),
              ...requestExamples(kind.name, kind.label, 'v1-json'),
            },
            'text/csv': {
              schema: ref(schemaName(kind.name, 'V1Csv')),
              ...requestExamples(kind.name, kind.label, 'v1-csv'),
            },
          },
        },
        responses: batchResponses(true),
      },
    };
  }
  const unauthorized = batchResponses(true)['401'];
  out['/api/v1/customer/{accountId}/stock'] = {
    get: {
      tags: ['v1 (deprecated)'],
      operationId: 'get-v1-stock',
      deprecated: true,
      summary: 'Stock snapshot (not available)',
      description: 'Always `501` (no stock source is connected), the same for every account id.',
      parameters: [
        {
          name: 'accountId',
          in: 'path',
          required: true,
          description: 'The business id whose stock is asked for.',
          schema: { type: 'string' },
          example: 'DEMO',
        },
        parameter('CorrelationId'),
      ],
      responses: {
        '501': {
          description: '`/problems/not-implemented`: no stock source is connected.',
          headers: {
            'x-correlation-id': { $ref: '#/components/headers/CorrelationId' },
            Deprecation: { $ref: '#/components/headers/Deprecation' },
          },
          content: { 'application/problem+json': { schema: ref('Problem') } },
        },
        '401': unauthorized,
      },
    },
  };
  out['/healthz'] = open('get-healthz', 'Liveness', 'The process runs.', {
    '200': {
      description: 'Alive.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { status: { const: 'ok', description: 'Always `ok`.' } },
            required: ['status'],
          },
        },
      },
    },
  });
  // /readyz and /metrics are on the admin listener (admin.host, admin.port), not in the partners' API.
  out['/openapi.json'] = open(
    'get-openapi',
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
    'get-docs',
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
  const notFound = {
    description: '`/problems/not-found`.',
    content: { 'application/problem+json': { schema: ref('Problem') } },
  };
  out['/docs/{asset}'] = {
    get: {
      ...open(
        'get-docs-asset',
        'API reference assets',
        'Scripts and styles of the reference page.',
        {
          '200': {
            description: 'The asset.',
            content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
          },
          '404': notFound,
        },
        'Documentation',
      ).get,
      parameters: [
        {
          name: 'asset',
          in: 'path',
          required: true,
          description: 'The file name, e.g. `swagger-ui.css`.',
          schema: { type: 'string' },
        },
      ],
    },
  };
  out['/problems/{code}'] = {
    get: {
      ...open(
        'get-problem-type',
        'What a problem type means',
        'Every problem `type` is a relative URI reference, `/problems/<code>`: resolved against the service it is this page, saying what happened and what to do.',
        {
          '200': {
            description: 'HTML page.',
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          '404': notFound,
        },
        'Documentation',
      ).get,
      parameters: [
        {
          name: 'code',
          in: 'path',
          required: true,
          description: 'The last segment of the problem `type`.',
          schema: { type: 'string' },
          example: 'validation-failed',
        },
      ],
    },
  };
  return out;
}

function schemas(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {
    BulkResponse: jsonSchema(bulkResponseSchema, 'The `202` body (spec §2.1).'),
    Problem: jsonSchema(problemSchema, 'Problem details (RFC 9457, spec §2.2).'),
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

const INTRODUCTION = `Takes in batches of business records (master data, sales orders, purchase orders, return goods, work orders), validates each batch all-or-nothing and publishes it to RabbitMQ. \`202\` means the broker confirmed every message.`;

/** Said only where the demo tenant is configured: elsewhere `DEMO` / `demo-api-key` is a 401. */
const TRY_WITH_DEMO = `**Try it out**: *Authorize* with \`DEMO\` / \`demo-api-key\` (this service has the demo tenant); every request body is pre-filled with a demo batch of the business \`DEMO\`.`;

const TRY_WITH_OWN = `**Try it out**: *Authorize* with your business id and API key. The request bodies are pre-filled with demo batches of the business \`DEMO\`: put your own business id in them (\`identifiers.businessId\`), or they are refused.`;

const PROBLEMS = `Errors are \`application/problem+json\` (RFC 9457); each problem \`type\` (\`/problems/<code>\`) resolves to a page on this service.`;

function description(demoCredential: boolean): string {
  return [INTRODUCTION, demoCredential ? TRY_WITH_DEMO : TRY_WITH_OWN, PROBLEMS].join('\n\n');
}

/** The document, for one app: built on first use, then the same object. */
export function openApiDocument(options: OpenApiOptions = {}): Record<string, unknown> {
  const servers = options.servers?.length
    ? options.servers.map((url) => ({ url }))
    : [{ url: '/', description: 'This service' }];
  return {
    openapi: '3.1.1',
    info: {
      title: 'warehouse-ingest',
      version: INTERFACE_VERSION,
      'x-service-version': PACKAGE_VERSION,
      description: description(options.demoCredential ?? false),
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers,
    security: [{ basicAuth: [] }],
    tags: [
      { name: 'v2', description: 'The current API: one endpoint per record kind.' },
      {
        name: 'v1 (deprecated)',
        description: 'For integrations moving from the previous vendor; converted to v2.',
      },
      PARTNER_TAG,
      { name: 'Operations', description: 'Liveness for load balancers.' },
      { name: 'Documentation', description: 'This document and its pages.' },
      {
        name: 'Events (webhooks)',
        description:
          "What the service sends to a business's endpoint, one webhook per event type of the event catalog (Standard Webhooks).",
      },
    ],
    paths: { ...paths(), ...partnerPaths(), ...partnerEventPaths() },
    webhooks: webhooks(),
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'User-id: the business id. Password: its API key.',
        },
      },
      parameters: { ...PARAMETERS, ...WEBHOOK_PARAMETERS },
      headers: HEADERS,
      schemas: {
        ...schemas(),
        ...partnerSchemas(),
        ...partnerEventSchemas(),
        ...webhookSchemas(),
      },
    },
  };
}
