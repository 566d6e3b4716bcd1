/** `http.apiDocs`: the API reference and its document on the partner-facing port (default) or only on the admin listener. */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/http-app.js';

const open: TestApp[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
});

const PATHS = ['/docs', '/openapi.json', '/docs/start.js', '/docs/swagger-ui.css'];

describe('http.apiDocs', () => {
  it('public (the default): /docs and /openapi.json on the partner-facing port, not on the admin listener', async () => {
    const t = await createTestApp({ amqpUrl: null });
    open.push(t);
    for (const path of PATHS) {
      expect((await t.app.request(path)).status, path).toBe(200);
      expect((await t.admin.request(path)).status, path).toBe(404);
    }
  });

  it('admin: the partner-facing port answers 404 there, the admin listener serves both', async () => {
    const t = await createTestApp({ amqpUrl: null, yaml: 'http:\n  apiDocs: admin' });
    open.push(t);
    for (const path of PATHS) {
      const hidden = await t.app.request(path);
      expect(hidden.status, path).toBe(404);
      expect(hidden.headers.get('content-type')).toBe('application/problem+json');
      expect((await t.admin.request(path)).status, path).toBe(200);
    }
    const document = (await (await t.admin.request('/openapi.json')).json()) as { openapi: string };
    expect(document.openapi).toMatch(/^3\.1/);
    expect(await (await t.admin.request('/docs')).text()).toContain('swagger-ui-bundle.js');
    // The API itself stays where it was.
    expect((await t.post('sales-orders', [])).status).toBe(400);
  });
});
