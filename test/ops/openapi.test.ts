import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG_TYPES } from '../../src/events/catalog/index.js';
import { exampleBody } from '../../src/events/catalog/json-schema.js';
import { KIND_NAMES } from '../../src/records/index.js';
import { openApiDocument } from '../../src/http/openapi.js';
import { createTestApp, type TestApp } from '../support/http-app.js';

interface Doc {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      {
        security?: unknown[];
        requestBody?: { content: Record<string, unknown> };
        responses: Record<string, unknown>;
      }
    >
  >;
  components: {
    securitySchemes: Record<string, unknown>;
    schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }>;
  };
}

let t: TestApp;
let doc: Doc;
let text: string;
beforeAll(async () => {
  t = await createTestApp();
  const response = await t.app.request('/openapi.json');
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json');
  text = await response.text();
  doc = JSON.parse(text) as Doc;
});
afterAll(() => t.close());

describe('GET /openapi.json', () => {
  it('tells readers to authorize with DEMO / demo-api-key only where the demo tenant is configured', () => {
    // This app's tenants are ACME and OTHER: the demo credential would be a 401 here.
    const { description } = (doc as unknown as { info: { description: string } }).info;
    expect(description).not.toContain('demo-api-key');
    expect(description).toContain('your business id and API key');
    const demo = openApiDocument({ demoCredential: true }) as { info: { description: string } };
    expect(demo.info.description).toContain('*Authorize* with `DEMO` / `demo-api-key`');
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(JSON.parse(text) as Parameters<typeof validate>[0]);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('documents every route the app registers, with its method, and no route it lacks', () => {
    const registered = t.app['~routes'].map((r) => ({
      path: (r.route ?? '').replace(/:(\w+)/g, '{$1}'),
      method: r.method?.toLowerCase(),
    }));
    expect(registered.length).toBeGreaterThan(20);
    for (const { path, method } of registered) {
      expect(doc.paths, `${path} is not documented`).toHaveProperty([path]);
      if (method)
        expect(doc.paths[path], `${method.toUpperCase()} ${path} is not documented`).toHaveProperty(
          [method],
        );
    }
    expect(Object.keys(doc.paths).sort()).toEqual(
      [...new Set(registered.map((r) => r.path))].sort(),
    );
  });

  it('covers v2, v1 with JSON and CSV bodies, stock and the operational endpoints', () => {
    for (const kind of KIND_NAMES) {
      expect(Object.keys(doc.paths[`/api/v2/${kind}`]!.post!.requestBody!.content)).toEqual([
        'application/json',
      ]);
      expect(Object.keys(doc.paths[`/api/v1/${kind}`]!.post!.requestBody!.content)).toEqual([
        'application/json',
        'text/csv',
      ]);
    }
    for (const path of ['/api/v1/customer/{accountId}/stock', '/healthz', '/openapi.json', '/docs'])
      expect(doc.paths[path]).toHaveProperty('get');
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
    // On the admin listener, not in the partners' API.
    expect(doc.paths['/readyz']).toBeUndefined();
    expect(doc.paths['/metrics']).toBeUndefined();
  });

  it('declares HTTP Basic, the bulk response and problem details with their errors entries', () => {
    expect(doc.components.securitySchemes.basicAuth).toMatchObject({
      type: 'http',
      scheme: 'basic',
    });
    expect(doc.components.schemas.BulkResponse!.required).toEqual([
      'success',
      'recordCount',
      'messageIds',
      'correlationId',
    ]);
    expect(doc.components.schemas.Problem!.required).toEqual(['type', 'title', 'status']);
    expect(JSON.stringify(doc.components.schemas.Problem!.properties!.errors)).toContain('"index"');
    expect(doc.paths['/api/v2/sales-orders']!.post!.responses).toHaveProperty([
      '400',
      'content',
      'application/problem+json',
    ]);
  });

  it('takes the record schemas from the zod schemas the service validates with', () => {
    const order = doc.components.schemas.SalesOrders!;
    expect(order.required).toContain('shipmentLines');
    expect(order.properties).toHaveProperty(
      ['identifiers', 'properties', 'businessId', 'minLength'],
      1,
    );
  });

  it.each(KIND_NAMES)(
    'lists the CSV columns the v1 decoder requires for %s: that header row alone is refused for having no rows, not for a column',
    async (kind) => {
      const name = kind.replace(/(^|-)(\w)/g, (_m, _d: string, c: string) => c.toUpperCase());
      const csv = (doc.components.schemas[`${name}V1Csv`] as { examples: string[] }).examples[0]!;
      const response = await t.post(`/api/v1/${kind}`, null, {
        raw: csv,
        headers: { 'content-type': 'text/csv' },
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { detail: string }).detail).toBe(
        'The file has no data rows',
      );
    },
  );

  it('has one webhook per event type of the catalog (the operator webhook types too), with the Standard Webhooks headers, its body schema and example', () => {
    const { webhooks, components } = JSON.parse(text) as {
      webhooks: Record<
        string,
        {
          post: {
            security: unknown[];
            parameters: Array<{ $ref: string }>;
            requestBody: {
              content: {
                'application/json': {
                  schema: { $ref: string };
                  examples: { example: { value: unknown } };
                };
              };
            };
            responses: Record<string, unknown>;
          };
        }
      >;
      components: {
        parameters: Record<string, { name: string; in: string; required: boolean }>;
        schemas: Record<string, { properties: Record<string, { const?: string }> }>;
      };
    };
    expect(Object.keys(webhooks)).toEqual(Object.keys(CATALOG_TYPES));
    for (const [type, entry] of Object.entries(CATALOG_TYPES)) {
      const { post } = webhooks[type]!;
      expect(post.security, type).toEqual([]);
      expect(
        post.parameters.map((p) => components.parameters[p.$ref.split('/').pop()!]),
        type,
      ).toEqual(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
          name,
          in: 'header',
          required: true,
          description: expect.any(String),
          schema: expect.any(Object),
          example: expect.any(String),
        })),
      );
      const media = post.requestBody.content['application/json'];
      const schema = components.schemas[media.schema.$ref.split('/').pop()!]!;
      expect(schema.properties.type!.const).toBe(type);
      expect(schema.properties).toHaveProperty(['data', 'required']);
      expect(media.examples.example.value).toEqual(exampleBody(entry));
      expect(Object.keys(post.responses)).toEqual(['200', '410']);
    }
  });
});
