import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningService } from '../../src/main.js';
import { signLink } from '../../src/portal/links.js';
import { hashApiKey } from '../../src/api-keys.js';
import { runCli } from '../support/cli-process.js';
import { OTHER } from '../support/http-app.js';
import { capture, launchChromium, newContext, signIn } from '../support/portal-browser.js';
import { type PortalService, startPortalService } from '../support/portal-service.js';
import { tempFolder } from '../support/temp.js';

/**
 * The partner portal in a real browser (Debian's chromium) against the real service with its
 * history on PostgreSQL: a link from `portal-link` signs in once, the pages show the business's
 * own batches (a refused CSV's errors by line and column) and nobody else's, forms need their
 * CSRF token, and signing out ends the session.
 *
 * Every page looked at is checked with axe-core and photographed (test/support/portal-browser.ts):
 * to test-output/portal/, and with PORTAL_SCREENSHOTS=docs to docs/img/portal-*.png (the ones
 * docs/portal.md shows).
 */
const CSV_HEADER = readFileSync(
  new URL('../../fixtures/demo/sales-orders.csv', import.meta.url),
  'utf8',
).split('\n')[0]!;
const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
/** The demo key's hash as config/development.yaml has it. */
const DEMO_KEY_HASH = (
  parse(readFileSync(new URL('../../config/development.yaml', import.meta.url), 'utf8')) as {
    tenants: Array<{ apiKeyHash: string }>;
  }
).tenants[0]!.apiKeyHash;

const temp = tempFolder('portal-');
let portal: PortalService;
let service: RunningService;
let browser: Browser;
let env: NodeJS.ProcessEnv;
let secret: Buffer;
let accepted: { correlationId: string; shipmentId: string };
let refusedId: string;
/** A CSV file dropped through a local pipeline and refused. */
let droppedId: string;

const post = (kind: string, body: string, contentType: string, version = 'v2') =>
  fetch(`${service.url}/api/${version}/${kind}`, {
    method: 'POST',
    headers: { authorization: DEMO, 'content-type': contentType },
    body,
  });

/** Waits until the history holds the batch (its writer flushes off the request path). */
async function inHistory(correlationId: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const found = await fetch(`${service.url}/api/v2/batches/${correlationId}`, {
        headers: { authorization: DEMO },
      });
      expect(found.status).toBe(200);
    },
    { timeout: 15_000, interval: 100 },
  );
}

beforeAll(async () => {
  mkdirSync(path.join(temp.dir, 'pipelines'));
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  temp.write(
    'pipelines/portal-drop.yaml',
    stringify({
      name: 'portal-drop',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: drop },
      readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
    }),
  );
  portal = await startPortalService({
    label: 'portal',
    dir: temp.dir,
    // The demo business (its public development key) and a second business, for tenancy: a
    // tenant list given here replaces development's.
    config: [
      'tenants:',
      '  - businessId: DEMO',
      `    apiKeyHash: "${DEMO_KEY_HASH}"`,
      '  - businessId: OTHER',
      `    apiKeyHash: "${await hashApiKey(OTHER.apiKey)}"`,
    ],
  });
  ({ service, env, secret } = portal);
  browser = await launchChromium();

  const orders = readFileSync(
    new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
    'utf8',
  );
  const ok = await post('sales-orders', orders, 'application/json');
  expect(ok.status).toBe(202);
  accepted = {
    correlationId: ((await ok.json()) as { correlationId: string }).correlationId,
    shipmentId: (JSON.parse(orders) as { identifiers: { shipmentId: string } }[])[0]!.identifiers
      .shipmentId,
  };
  // A dropped file, between the accepted batch and the refused one: one order whose quantity is no number, on line 2.
  writeFileSync(
    path.join(drop, 'orders-bad.csv'),
    `${CSV_HEADER}\nDEMO,SO-PORTAL-9,2026-02-03,1,SKU-1,many,EA,9.99\n`,
  );
  droppedId = await vi.waitFor(
    async () => {
      const listed = await fetch(`${service.url}/api/v2/batches?source=portal-drop`, {
        headers: { authorization: DEMO },
      });
      const { items } = (await listed.json()) as { items: { correlationId: string }[] };
      expect(items).toHaveLength(1);
      return items[0]!.correlationId;
    },
    { timeout: 20_000, interval: 100 },
  );

  // Two orders, one error each: a quantity on line 3, a date on line 4 (the header is line 1).
  const rows = [
    CSV_HEADER,
    'DEMO,SO-PORTAL-1,2026-02-03,1,SKU-1,2,EA,9.99',
    'DEMO,SO-PORTAL-1,2026-02-03,2,SKU-2,12abc,EA,4.50',
    'DEMO,SO-PORTAL-2,03/02/2026,1,SKU-9,5,EA,12',
  ];
  const refused = await post('sales-orders', rows.join('\n'), 'text/csv', 'v1');
  expect(refused.status).toBe(400);
  refusedId = refused.headers.get('x-correlation-id')!;
  await inHistory(accepted.correlationId);
  await inHistory(refusedId);
});

afterAll(async () => {
  await browser?.close();
  await portal?.stop();
});

describe('the partner portal in a browser', () => {
  let link: string;
  let own: { context: BrowserContext; page: Page };

  it('signs in with a link from portal-link and lists the business’s batches, newest first', async () => {
    const printed = await runCli(['portal-link', '--business', 'DEMO', '--ttl', '1h'], { env });
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    link = printed.stdout.trim();
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${env.PORT}/portal/login\\?token=`));
    // Longer than portal.maxLinkTtlMs (24 h by default): refused.
    const tooLong = await runCli(['portal-link', '--business', 'DEMO', '--ttl', '2d'], { env });
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain('portal.maxLinkTtlMs');
    expect(tooLong.stdout).toBe('');
    // A link scanner fetching it first (a GET) spends nothing.
    expect((await fetch(link)).status).toBe(200);

    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(link);
    await page.getByRole('heading', { name: 'Sign in to your portal' }).waitFor();
    await capture(page, 'login');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/portal$/);
    own = { context, page };
    // The first page is the overview (overview.test.ts); the batches are a click away.
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Batches', exact: true }).click();
    await page.getByRole('heading', { name: 'Batches', level: 1 }).waitFor();
    const ids = await page.locator('tbody tr td:nth-child(2)').allInnerTexts();
    expect(ids).toEqual([refusedId, droppedId, accepted.correlationId]);
    await expect.poll(() => page.getByText('Signed in as DEMO').count()).toBe(1);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({
      name: 'portal_session',
      httpOnly: true,
      sameSite: 'Strict',
      path: '/portal',
    });
    await capture(page, 'batches');

    // A page at a time, with the API's cursor.
    await page.goto(`${service.url}/portal/batches?limit=1`);
    expect(await page.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual([refusedId]);
    await page.getByRole('link', { name: 'Older batches' }).click();
    await page.waitForURL(/cursor=/);
    expect(await page.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual([droppedId]);
    await page.getByRole('link', { name: 'Older batches' }).click();
    await page.waitForURL(/cursor=/);
    expect(await page.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual([
      accepted.correlationId,
    ]);
    // The last page has no older one.
    expect(await page.getByRole('link', { name: 'Older batches' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Newest batches' }).click();
    await page.waitForURL(/\/portal\/batches\?limit=1$/);

    // The filters are the API's: only refusals.
    await page.getByLabel('Outcome').selectOption('rejected');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/outcome=rejected/);
    expect(await page.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual([
      refusedId,
      droppedId,
    ]);
  });

  it("shows a refused CSV's every error by line and column", async () => {
    const { page } = own;
    await page.getByRole('link', { name: refusedId }).click();
    await page.getByRole('heading', { name: 'Why it was refused' }).waitFor();
    const rows = await page
      .locator('section table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())),
      );
    expect(rows).toEqual([
      ['1', '3', 'oOrderLines_Qty', 'Expected a number, received "12abc"'],
      ['2', '4', 'DueOutDate', expect.stringMatching(/^Expected a date/)],
    ]);
    await expect.poll(() => page.getByText('HTTP /api/v1/sales-orders').count()).toBe(1);
    await capture(page, 'batch-refused');
  });

  it("shows a dropped CSV file's errors too, with its file and pipeline", async () => {
    const { page } = own;
    await page.goto(`${service.url}/portal/batches/${droppedId}`);
    await page.getByRole('heading', { name: 'Why it was refused' }).waitFor();
    await expect
      .poll(() => page.getByText('File orders-bad.csv (pipeline portal-drop)').count())
      .toBe(1);
    const rows = await page
      .locator('section table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())),
      );
    expect(rows).toEqual([['1', '2', 'oOrderLines_Qty', 'Expected a number, received "many"']]);
    await capture(page, 'batch-dropped-file');
  });

  it('lists an accepted batch’s records by business key, each linking to its record page', async () => {
    const { page } = own;
    await page.goto(`${service.url}/portal/batches/${accepted.correlationId}`);
    await page.getByRole('heading', { name: 'Records', level: 2 }).waitFor();
    const keys = await page
      .locator('section[aria-labelledby="records"] tbody td:nth-child(2)')
      .allInnerTexts();
    expect(keys[0]).toBe(accepted.shipmentId);
    expect(keys.length).toBeGreaterThan(0);
    await capture(page, 'batch-accepted');
    await page.getByRole('link', { name: accepted.shipmentId, exact: true }).click();
    await page.waitForURL(/\/portal\/records\?kind=sales-orders&key=/);
    await page.getByRole('link', { name: accepted.correlationId }).waitFor();
  });

  it('finds a record by its number: state, the batch that carried it', async () => {
    const { page } = own;
    await page.getByRole('link', { name: 'Record lookup' }).click();
    await page.getByLabel('Kind').selectOption('sales-orders');
    await page.getByLabel('Record number').fill(accepted.shipmentId);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('link', { name: accepted.correlationId }).waitFor();
    await expect.poll(() => page.locator('dl.facts dd').first().textContent()).toBe('accepted');
    await capture(page, 'record');
  });

  it('says events are not delivered by this service when it runs without a broker', async () => {
    const { page } = own;
    for (const [name, heading] of [
      ['Events', 'Events'],
      ['Endpoints', 'Endpoints'],
    ] as const) {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.getByText('Events are not delivered by this service').waitFor();
      expect(await page.getByRole('button', { name: /Resend|Send test event/ }).count()).toBe(0);
    }
  });

  it('refuses the same link a second time, an expired link and a tampered one — saying which', async () => {
    const again = await signIn(browser, link);
    await again.page
      .getByRole('heading', { name: 'This sign-in link has already been used' })
      .waitFor();
    expect(await again.context.cookies()).toEqual([]);
    await capture(again.page, 'link-used');
    await again.context.close();

    const page = await own.context.newPage();
    const expired = new URL(link);
    expired.searchParams.set('token', signLink(secret, 'DEMO', Date.now() - 1000));
    expect((await page.goto(expired.href))?.status()).toBe(410);
    await page.getByRole('heading', { name: 'This sign-in link has expired' }).waitFor();
    await capture(page, 'link-expired');

    // The payload changed to another business, the signature kept.
    const token = new URL(link).searchParams.get('token')!;
    const [payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as object;
    const forged = Buffer.from(JSON.stringify({ ...claims, b: 'OTHER' })).toString('base64url');
    const tampered = new URL(link);
    tampered.searchParams.set('token', `${forged}.${signature}`);
    expect((await page.goto(tampered.href))?.status()).toBe(400);
    await page.getByText('The link has been changed since it was made.').waitFor();
    // And posted straight, past the page: refused the same way.
    const direct = await fetch(`${service.url}/portal/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: `${forged}.${signature}` }),
      redirect: 'manual',
    });
    expect(direct.status).toBe(400);
    expect(direct.headers.get('set-cookie')).toBeNull();
    // A form body larger than a form can be is not read: refused as no link at all.
    const huge = await fetch(`${service.url}/portal/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(`token=${'a'.repeat(64 * 1024)}`));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(huge.status).toBe(400);
    await page.close();
  });

  it("never shows another business's batch: 404 for it, and only its own in the list", async () => {
    const other = await signIn(browser, portal.link('OTHER'));
    await other.page.waitForURL(/\/portal$/);
    await other.page.getByText('0 batches accepted, 0 refused').waitFor();
    await other.page.goto(`${service.url}/portal/batches`);
    await other.page.getByText('No batches in the history.').waitFor();
    const response = await other.page.goto(`${service.url}/portal/batches/${refusedId}`);
    expect(response?.status()).toBe(404);
    await other.page.getByRole('heading', { name: 'No such batch' }).waitFor();
    expect(await other.page.content()).not.toContain('oOrderLines_Qty');
    await capture(other.page, 'other-business-404');
    const record = await other.page.goto(
      `${service.url}/portal/records?kind=sales-orders&key=${encodeURIComponent(accepted.shipmentId)}`,
    );
    expect(record?.status()).toBe(404);
    await other.context.close();
  });

  it('refuses a POST without its CSRF token, or from another origin, and keeps the session', async () => {
    const { page } = own;
    await page.goto(`${service.url}/portal`);
    const csrf = await page.locator('input[name="csrf"]').getAttribute('value');
    expect(csrf).toBeTruthy();
    const withoutToken = await page.request.post(`${service.url}/portal/logout`, {
      form: {},
      maxRedirects: 0,
    });
    expect(withoutToken.status()).toBe(403);
    const wrongToken = await page.request.post(`${service.url}/portal/logout`, {
      form: { csrf: `${csrf}x` },
      maxRedirects: 0,
    });
    expect(wrongToken.status()).toBe(403);
    const foreign = await page.request.post(`${service.url}/portal/logout`, {
      form: { csrf: csrf! },
      headers: { origin: 'https://attacker.example' },
      maxRedirects: 0,
    });
    expect(foreign.status()).toBe(403);
    expect((await page.goto(`${service.url}/portal`))?.status()).toBe(200);
  });

  it('signs out: the session ends, and its cookie no longer opens a page', async () => {
    const { page, context } = own;
    const cookie = (await context.cookies())[0]!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    await capture(page, 'signed-out');
    expect((await page.goto(`${service.url}/portal`))?.status()).toBe(401);
    // The old cookie, sent again by hand, is no session any more.
    const replay = await fetch(`${service.url}/portal`, {
      headers: { cookie: `portal_session=${cookie.value}` },
    });
    expect(replay.status).toBe(401);
    await context.close();
  });
});
