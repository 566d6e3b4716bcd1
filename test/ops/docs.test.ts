import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from 'h3';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildHttpApp } from '../../src/http/build.js';
import { createLogger } from '../../src/log.js';
import { createPublisher } from '../../src/publish/index.js';
import { KINDS } from '../../src/records/index.js';
import { createTestApp, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

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

describe('"Try it out" in a real browser, with the demo credential', () => {
  let dev: { server: http.Server; base: string; close: () => Promise<void> };
  beforeAll(async () => {
    // A development service as a newcomer runs it: the demo tenant, the embedded publisher.
    const folder = tempFolder('docs-try-');
    const config = loadConfig({
      env: {
        INGEST_ENV: 'development',
        INGEST_CONFIG: folder.write('config.yaml', `dataDirectory: ${folder.dir}\n`),
      },
    });
    const log = createLogger({ level: 'silent' });
    const publisher = createPublisher(config, log);
    await publisher.start();
    const devServer = http.createServer(toNodeHandler(buildHttpApp(config, publisher, log).app));
    await new Promise<void>((resolve) => devServer.listen(0, '127.0.0.1', resolve));
    dev = {
      server: devServer,
      base: `http://127.0.0.1:${(devServer.address() as AddressInfo).port}`,
      close: async () => {
        devServer.closeAllConnections();
        await new Promise((resolve) => devServer.close(resolve));
        await publisher.close();
      },
    };
  });
  afterAll(() => dev?.close());

  it('authorizes as DEMO, sends the pre-filled sales orders and shows the 202', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${dev.base}/docs`);
    await page
      .getByRole('button', { name: /authorize/i })
      .first()
      .click();
    const dialog = page.locator('.auth-container').first();
    await dialog.locator('input[type="text"]').fill('DEMO');
    await dialog.locator('input[type="password"]').fill('demo-api-key');
    // Swagger UI's own classes: its buttons' accessible names differ between releases.
    await dialog.locator('button.modal-btn.authorize').click();
    await dialog.locator('button.modal-btn.btn-done').click();

    await page.getByText('Send a batch of sales orders', { exact: true }).click();
    const operation = page.locator('#operations-v2-post-v2-sales-orders');
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await expect.poll(() => status.first().textContent(), { timeout: 15_000 }).toContain('202');
    const body = operation.locator('.live-responses-table .response-col_description pre').first();
    await expect.poll(() => body.textContent()).toContain('"recordCount": 3');
    if (process.env.DOCS_TRY_IT_OUT_SCREENSHOT) {
      await operation.locator('.live-responses-table').scrollIntoViewIfNeeded();
      await page.mouse.wheel(0, -200);
      await page.screenshot({ path: process.env.DOCS_TRY_IT_OUT_SCREENSHOT });
    }
    expect(problems).toEqual([]);
    await page.close();
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
