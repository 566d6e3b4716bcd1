import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from 'h3';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KINDS } from '../../src/records/index.js';
import { createTestApp, type TestApp } from '../support/http-app.js';

/** Debian's chromium, installed by scripts/ensure-services.sh; a missing one fails the test loudly. */
const CHROMIUM = '/usr/bin/chromium';

let t: TestApp;
let server: http.Server;
let base: string;
let browser: Browser;
beforeAll(async () => {
  t = await createTestApp();
  server = http.createServer(toNodeHandler(t.app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM });
});
afterAll(async () => {
  await browser?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

describe('GET /docs in a real browser', () => {
  it('renders every endpoint from /openapi.json, loading nothing from outside the service, with no errors', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));

    const response = await page.goto(`${base}/docs`);
    expect(response?.status()).toBe(200);
    await expect.poll(() => page.title()).toBe('warehouse-ingest API reference');
    for (const kind of Object.values(KINDS)) {
      await page
        .getByText(`Send a batch of ${kind.label}s`, { exact: true })
        .waitFor({ state: 'visible', timeout: 15_000 });
    }
    // Readiness and metrics are on the admin listener, not in the partners' document.
    for (const summary of ['Stock snapshot (not available)', 'Liveness', 'API reference']) {
      await page.getByText(summary, { exact: true }).first().waitFor({ state: 'visible' });
    }
    // The Authorize button comes from the HTTP Basic security scheme.
    await page
      .getByRole('button', { name: /authorize/i })
      .first()
      .waitFor({ state: 'visible' });
    if (process.env.DOCS_SCREENSHOT)
      await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: false });

    // Opening an operation shows its body schema and its answers, problem details included.
    await page.getByText('Send a batch of sales orders', { exact: true }).click();
    const operation = page.locator('#operations-v2-post-v2-sales-orders');
    await operation.getByText('Request body').waitFor({ state: 'visible' });
    await operation
      .getByText('Every record passed and the broker confirmed every message.')
      .waitFor({ state: 'visible' });
    await operation.getByText('application/problem+json').first().waitFor({ state: 'attached' });
    if (process.env.DOCS_SCREENSHOT)
      await page.screenshot({
        path: process.env.DOCS_SCREENSHOT.replace(/\.png$/, '-operation.png'),
        fullPage: false,
      });

    expect(problems).toEqual([]);
    expect(
      requested.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:')),
    ).toEqual([]);
    expect(requested).toContain(`${base}/openapi.json`);
    await page.close();
  });

  it('serves only the assets the page needs', async () => {
    const css = await t.app.request('/docs/swagger-ui.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    const other = await t.app.request('/docs/package.json');
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
    expect((await t.app.request('/docs/..%2Fpackage.json')).status).toBe(404);
  });
});

describe('reason phrases on the wire', () => {
  const statusLine = (path: string) =>
    new Promise<string>((resolve, reject) => {
      http
        .get(`${base}${path}`, { agent: false }, (response) => {
          response.resume();
          resolve(`${response.statusCode} ${response.statusMessage}`);
        })
        .on('error', reject);
    });

  it('/docs, its assets and /openapi.json answer "200 OK", not an empty phrase', async () => {
    for (const path of ['/docs', '/docs/start.js', '/docs/swagger-ui.css', '/openapi.json'])
      expect(await statusLine(path), path).toBe('200 OK');
  });
});
