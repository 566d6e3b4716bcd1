/**
 * /openapi.json as a partner uses it: it passes Redocly's recommended rules, a typed client
 * generated from it (openapi-typescript) type-checks against a small client call and the demo
 * examples, every problem `type` resolves to a page, and `servers` comes from the configuration.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_TYPES } from '../../src/http/problem-pages.js';
import { createTestApp, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

let t: TestApp;
let text: string;
beforeAll(async () => {
  t = await createTestApp({
    amqpUrl: null,
    yaml: 'http:\n  publicUrls: ["https://ingest.acme-logistics.net", "https://ingest-eu.acme-logistics.net"]',
  });
  text = await (await t.app.request('/openapi.json')).text();
});
afterAll(() => t.close());

describe('/openapi.json for a partner', () => {
  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    // One exception, by design: the v1 stock snapshot answers 501 only (the contract keeps the path).
    const stockHasNo2xx = (p: (typeof problems)[number]) =>
      p.ruleId === 'operation-2xx-response' &&
      p.location[0]?.pointer === '#/paths/~1api~1v1~1customer~1{accountId}~1stock/get/responses';
    expect(
      problems
        .filter((p) => !stockHasNo2xx(p))
        .map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    ).toEqual([]);
  });

  it('says the interface version (1.0), the package version apart, and the servers from http.publicUrls', async () => {
    const doc = JSON.parse(text) as {
      info: { version: string; 'x-service-version': string };
      servers: Array<{ url: string }>;
    };
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(doc.info.version).toBe('1.0');
    expect(doc.info['x-service-version']).toBe(version);
    expect(doc.servers.map((s) => s.url)).toEqual([
      'https://ingest.acme-logistics.net',
      'https://ingest-eu.acme-logistics.net',
    ]);
  });

  it('declares Idempotency-Key, the refusals 408-431 and 503, and the response headers a client reads', () => {
    const doc = JSON.parse(text) as {
      paths: Record<
        string,
        {
          post?: {
            requestBody?: unknown;
            parameters: Array<{ $ref: string }>;
            responses: Record<string, { headers?: Record<string, unknown> }>;
          };
        }
      >;
      components: { parameters: Record<string, { name: string }> };
    };
    for (const [route, item] of Object.entries(doc.paths)) {
      // The batch endpoints, which take a body: the partner API's actions take none.
      if (!item.post?.requestBody) continue;
      const names = item.post.parameters.map(
        (p) => doc.components.parameters[p.$ref.split('/').pop()!]!.name,
      );
      expect(names, route).toContain('Idempotency-Key');
      expect(Object.keys(item.post.responses), route).toEqual(
        expect.arrayContaining(['202', '408', '409', '413', '415', '422', '429', '431', '503']),
      );
      const { responses } = item.post;
      expect(Object.keys(responses['202']!.headers!), route).toEqual(
        expect.arrayContaining([
          'x-correlation-id',
          'RateLimit',
          'RateLimit-Policy',
          'Idempotent-Replayed',
          'Ingest-Environment',
        ]),
      );
      expect(Object.keys(responses['429']!.headers!)).toContain('Retry-After');
      expect(Object.keys(responses['503']!.headers!)).toContain('Retry-After');
      if (route.startsWith('/api/v1/'))
        expect(Object.keys(responses['202']!.headers!)).toEqual(
          expect.arrayContaining(['Deprecation', 'Link']),
        );
    }
  });

  it('generates a typed client (openapi-typescript) that type-checks batch and partner API calls and every demo example', async () => {
    const folder = tempFolder('openapi-client-');
    writeFileSync(path.join(folder.dir, 'api.ts'), astToString(await openapiTS(text)));
    const demo = (file: string) =>
      readFileSync(new URL(`../../fixtures/demo/${file}`, import.meta.url), 'utf8');
    writeFileSync(
      path.join(folder.dir, 'client.ts'),
      `import type { components, paths } from './api.js';

type Post = paths['/api/v2/sales-orders']['post'];
type Orders = Post['requestBody']['content']['application/json'];
type Accepted = Post['responses']['202']['content']['application/json'];
type Problem = components['schemas']['Problem'];
type Headers = NonNullable<Post['parameters']['header']>;

export async function sendOrders(base: string, orders: Orders, key: string): Promise<Accepted | Problem> {
  const headers: Headers & Record<string, string> = {
    'Idempotency-Key': key,
    'content-type': 'application/json',
    authorization: 'Basic ' + btoa('DEMO:demo-api-key'),
  };
  const response = await fetch(base + '/api/v2/sales-orders', { method: 'POST', headers, body: JSON.stringify(orders) });
  if (response.status === 202) {
    const accepted = (await response.json()) as Accepted;
    console.log(accepted.recordCount, accepted.messageIds.length, accepted.correlationId);
    return accepted;
  }
  const problem = (await response.json()) as Problem;
  console.log(problem.type, problem.status, problem.detail, problem.errors?.length);
  return problem;
}

type Ok<Path extends keyof paths, Method extends 'get' | 'post', Status extends 200 | 202> =
  NonNullable<paths[Path][Method]> extends { responses: Record<Status, { content: { 'application/json': infer Body } }> }
    ? Body
    : never;

/** The partner API: events whose last attempt failed are sent again, then each endpoint is tested. */
export async function redeliver(base: string, authorization: string): Promise<string[]> {
  const get = async <Body>(path: string) => (await (await fetch(base + path, { headers: { authorization } })).json()) as Body;
  const post = async <Body>(path: string) => (await (await fetch(base + path, { method: 'POST', headers: { authorization } })).json()) as Body;
  const said: string[] = [];
  const page = await get<Ok<'/api/v2/events', 'get', 200>>('/api/v2/events?type=sales-order.shipped&limit=100');
  for (const event of page.items) {
    if (event.attempts.at(-1)?.end !== 'failed') continue;
    const resent = await post<Ok<'/api/v2/events/{id}/resend', 'post', 202>>('/api/v2/events/' + encodeURIComponent(event.id) + '/resend');
    said.push(resent.eventId + ' → ' + resent.endpoints.join(', '));
  }
  const hooks = await get<Ok<'/api/v2/webhooks', 'get', 200>>('/api/v2/webhooks');
  for (const hook of hooks.items) {
    const test = await post<Ok<'/api/v2/webhooks/{id}/test', 'post', 200>>('/api/v2/webhooks/' + hook.id + '/test');
    said.push(hook.name + ' (' + hook.state + '): ' + test.attempt.end + ' ' + (test.attempt.status ?? test.attempt.error));
  }
  const batches = await get<Ok<'/api/v2/batches', 'get', 200>>('/api/v2/batches?outcome=rejected');
  for (const batch of batches.items) said.push(batch.correlationId + ' ' + batch.outcome + ' ' + batch.recordCount);
  return said;
}

export const orders: Orders = ${demo('sales-orders.json')};
export const masterData: paths['/api/v2/master-data']['post']['requestBody']['content']['application/json'] = ${demo('master-data.json')};
export const workOrders: paths['/api/v2/work-orders']['post']['requestBody']['content']['application/json'] = ${demo('work-orders.json')};
export const legacy: paths['/api/v1/purchase-orders']['post']['requestBody']['content']['application/json'] = ${demo('purchase-orders.v1.json')};

// @ts-expect-error a sales order without its required fields is refused by the compiler
export const incomplete: Orders = [{ identifiers: { shipmentId: 'SO-1' } }];
`,
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const run = promisify(execFile);
    const result = await run(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        // Node's own types for fetch and btoa: the DOM library is the bulk of a cold tsc run.
        '--lib',
        'es2022',
        '--typeRoots',
        fileURLToPath(new URL('../../node_modules/@types', import.meta.url)),
        '--types',
        'node',
        '--skipLibCheck',
        path.join(folder.dir, 'client.ts'),
      ],
      { cwd: folder.dir },
    ).catch((error: { stdout: string; stderr: string }) => error);
    expect(`${result.stdout}${result.stderr}`).toBe('');
  });
});

describe('problem types', () => {
  it('are the ones docs/api.md lists, and each resolves to a page on the service', async () => {
    const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const listed = [...api.matchAll(/^\| \d{3} \| `\/problems\/([a-z-]+)` \|/gm)].map((m) => m[1]);
    expect([...listed].sort()).toEqual(Object.keys(PROBLEM_TYPES).sort());
    for (const code of listed) {
      const page = await t.app.request(`/problems/${code}`);
      expect(page.status, code).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await page.text()).toContain(`/problems/${code}`);
    }
    const missing = await t.app.request('/problems/no-such-thing');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
  });

  it("a refusal's type, resolved against the request URL, is such a page", async () => {
    const refused = await t.post('sales-orders', [], { auth: null });
    const { type } = (await refused.json()) as { type: string };
    const page = await t.app.request(
      new URL(type, 'http://localhost/api/v2/sales-orders').pathname,
    );
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('401 Unauthorized');
  });
});
