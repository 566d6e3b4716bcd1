import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CURRENT_COST, hashApiKey } from '../../src/api-keys.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { AttemptEntry, BatchEntry, EventEntry } from '../../src/history/store.js';
import { capture, launchChromium, newContext, signIn } from '../support/portal-browser.js';
import { type PortalService, startPortalService } from '../support/portal-service.js';
import { tempFolder } from '../support/temp.js';

/**
 * The portal's first page, the overview, in a real browser against the real service (history on
 * PostgreSQL) with a history seeded with known counts: the totals, the charts' bars and their
 * table, each endpoint's last day, the latest failures linking to their pages — for a business,
 * and for an operator across businesses or for the one chosen. Each page is checked with axe-core
 * and photographed (docs/img/portal-overview.png with PORTAL_SCREENSHOTS=docs).
 */
const DAY = 86_400_000;
const PASSWORD = 'overview-test-password-1';
const temp = tempFolder('portal-overview-');
let portal: PortalService;
let browser: Browser;

const now = Date.now();
const todayStart = Math.floor(now / DAY) * DAY;
/** A minute into the day `n` days ago (UTC), and that day's date. */
const dayAgo = (n: number) => new Date(todayStart - n * DAY + 60_000);
const dateAgo = (n: number) => dayAgo(n).toISOString().slice(0, 10);
const ago = (ms: number) => new Date(now - ms);

let serial = 0;
function batch(
  businessId: string,
  daysAgo: number,
  outcome: BatchEntry['outcome'],
  recordCount: number,
): BatchEntry {
  return {
    id: randomUUID(),
    correlationId: `seed-${businessId.toLowerCase()}-${outcome}-${daysAgo}-${serial++}`,
    businessId,
    source: { endpoint: '/api/v2/sales-orders' },
    kind: 'sales-orders',
    recordCount,
    outcome,
    ...(outcome !== 'accepted' &&
      outcome !== 'duplicate' && {
        problem: { title: 'Your request is not valid', status: 400, detail: 'seeded' },
      }),
    at: dayAgo(daysAgo),
  };
}

const SEEDED = [
  batch('SEEDED', 0, 'accepted', 4),
  batch('SEEDED', 0, 'accepted', 5),
  batch('SEEDED', 0, 'accepted', 6),
  batch('SEEDED', 0, 'rejected', 2),
  batch('SEEDED', 1, 'duplicate', 3),
  batch('SEEDED', 1, 'error', 0),
  batch('SEEDED', 6, 'accepted', 10),
  batch('SEEDED', 6, 'accepted', 10),
  batch('SEEDED', 29, 'accepted', 1),
  batch('SEEDED', 30, 'accepted', 100), // past the 30 days kept: not shown
];
const ELSE = [batch('ELSE', 2, 'rejected', 9), batch('ELSE', 2, 'accepted', 1)];

function attempt(
  businessId: string,
  endpoint: string,
  eventId: string,
  msAgo: number,
  end: AttemptEntry['end'],
): AttemptEntry {
  return {
    id: randomUUID(),
    eventId,
    businessId,
    endpoint,
    at: ago(msAgo),
    end,
    status: end === 'delivered' ? 204 : end === 'gone' ? 410 : 503,
    durationMs: 30,
    ...(end !== 'delivered' && { responseExcerpt: 'Service Unavailable' }),
  };
}

const HOUR = 3_600_000;
const ATTEMPTS = [
  attempt('SEEDED', 'erp', 'evt-a', 2 * HOUR, 'delivered'),
  attempt('SEEDED', 'erp', 'evt-b', 3 * HOUR, 'failed'),
  attempt('SEEDED', 'erp', 'evt-b', 1 * HOUR, 'failed'),
  attempt('SEEDED', 'erp', 'evt-c', HOUR / 2, 'gone'),
  attempt('SEEDED', 'erp', 'evt-d', 5 * HOUR, 'failed'),
  attempt('SEEDED', 'erp', 'evt-d', 4 * HOUR, 'delivered'),
  attempt('SEEDED', 'https://hooks.example/orders', 'evt-a', 2 * HOUR, 'delivered'),
  attempt('ELSE', 'erp', 'evt-z', 2 * HOUR, 'failed'),
];
const event = (id: string, businessId: string): EventEntry => ({
  id,
  type: 'sales-order.shipped',
  businessId,
  payload: { orderNumber: id },
  receivedAt: ago(6 * HOUR),
});
const EVENTS = [
  event('evt-a', 'SEEDED'),
  event('evt-b', 'SEEDED'),
  event('evt-c', 'SEEDED'),
  event('evt-d', 'SEEDED'),
  event('evt-z', 'ELSE'),
];

beforeAll(async () => {
  portal = await startPortalService({
    label: 'portaloverview',
    dir: temp.dir,
    config: [
      `portal: ${JSON.stringify({ operators: [{ name: 'ops', passwordHash: await hashApiKey(PASSWORD, CURRENT_COST) }] })}`,
      'tenants:',
      '  - businessId: SEEDED',
      `    apiKeyHash: "${await hashApiKey('overview-test-seeded-key')}"`,
      '  - businessId: ELSE',
      `    apiKeyHash: "${await hashApiKey('overview-test-else-key')}"`,
    ],
  });
  // Written as the service's writer would, on the same database.
  const store = createPostgresHistory({ url: String(portal.env.HISTORY_URL) });
  await store.open();
  await store.write({ batches: [...SEEDED, ...ELSE], events: EVENTS, attempts: ATTEMPTS });
  await store.close();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await portal?.stop();
});

/** The totals above the charts, by their labels. */
async function tiles(page: Page): Promise<Record<string, string>> {
  const pairs = await page
    .locator('dl.tiles .tile')
    .evaluateAll((tiles) =>
      tiles.map((tile) => [
        tile.querySelector('dt')?.textContent ?? '',
        tile.querySelector('dd')?.textContent ?? '',
      ]),
    );
  return Object.fromEntries(pairs);
}

/** The per-day table's rows, as text, keyed by day. */
async function dayRows(page: Page): Promise<Map<string, string[]>> {
  const rows = await page
    .locator('details.figures tbody tr')
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('th, td')].map((cell) => cell.textContent ?? '')),
    );
  return new Map(rows.map((row) => [row[0] ?? '', row.slice(1)]));
}

async function deliveryRows(page: Page): Promise<string[][]> {
  const rows = await page.locator('table.deliveries tbody tr').all();
  return Promise.all(
    rows.map(async (row) =>
      (await row.locator('th, td').allInnerTexts()).map((text) => text.replace(/\s+/g, ' ').trim()),
    ),
  );
}

describe('the overview, the portal’s first page', () => {
  it("shows a business its batches and records per day, its endpoints' last day and its latest failures", async () => {
    const { page, context } = await signIn(browser, portal.link('SEEDED'));
    await page.waitForURL(/\/portal$/);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    expect(await tiles(page)).toEqual({
      'Batches accepted': '7',
      'Batches refused': '2',
      'Records accepted': '39',
      'Records refused': '2',
    });
    // The charts: named images, one bar per day that had batches; refused ones hatched.
    const batches = page.getByRole('img', { name: 'Batches per day' });
    expect(await batches.locator('desc').textContent()).toBe(
      `Batches per day, ${dateAgo(29)} to ${dateAgo(0)} (UTC): 7 batches accepted and 2 refused in all.`,
    );
    expect(await batches.locator('rect.bar.accepted').count()).toBe(4);
    expect(await batches.locator('rect.bar.refused').count()).toBe(2);
    expect(
      await page.getByRole('img', { name: 'Records per day' }).locator('desc').textContent(),
    ).toContain('39 records accepted and 2 refused in all.');
    await capture(page, 'overview');
    // The same figures as a table: 30 days, zeros included, nothing from before them.
    await page.getByText('The same figures as a table').click();
    const rows = await dayRows(page);
    expect(rows.size).toBe(30);
    expect(rows.get(dateAgo(0))).toEqual(['3', '1', '15', '2']);
    expect(rows.get(dateAgo(1))).toEqual(['1', '1', '3', '0']);
    expect(rows.get(dateAgo(2))).toEqual(['0', '0', '0', '0']);
    expect(rows.get(dateAgo(29))).toEqual(['1', '0', '1', '0']);
    expect(rows.has(dateAgo(30))).toBe(false);

    expect(await deliveryRows(page)).toEqual([
      ['erp', '2', '1', '1', '', '33.3 % 2 of 6 attempts'],
      ['https://hooks.example/orders', '1', '0', '0', '', '100 % 1 of 1 attempts'],
    ]);
    // The latest failures, newest first, linking to their pages.
    const refused = page.locator('section[aria-labelledby="refused-batches"] li a');
    expect(await refused.allInnerTexts()).toEqual([
      SEEDED[3]!.correlationId,
      SEEDED[5]!.correlationId,
    ]);
    const failed = page.locator('section[aria-labelledby="failed-deliveries"] li a');
    expect(await failed.allInnerTexts()).toEqual(['evt-c', 'evt-b', 'evt-b', 'evt-d']);
    await capture(page, 'overview-table');

    await refused.first().click();
    await page.getByRole('heading', { name: `Batch ${SEEDED[3]!.correlationId}` }).waitFor();
    await page.goBack();
    await failed.first().click();
    await page
      .getByRole('heading', { name: 'Event sales-order.shipped evt-c', level: 1 })
      .waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    await capture(page, 'event');
    // Another business's event is missing, as an unknown one.
    expect((await page.goto(`${portal.service.url}/portal/events/evt-z`))?.status()).toBe(404);
    await context.close();
  });

  it('shows an operator every business, or the one chosen', async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${portal.service.url}/portal/operator`);
    await page.getByLabel('Name').fill('ops');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    expect(await tiles(page)).toEqual({
      'Batches accepted': '8',
      'Batches refused': '3',
      'Records accepted': '40',
      'Records refused': '11',
    });
    expect((await deliveryRows(page)).map((row) => row.slice(0, 2))).toEqual([
      ['ELSE', 'erp'],
      ['SEEDED', 'erp'],
      ['SEEDED', 'https://hooks.example/orders'],
    ]);
    await capture(page, 'operator-overview');
    await page.getByLabel('Business').selectOption('ELSE');
    await page.getByRole('button', { name: 'View' }).click();
    await expect.poll(async () => (await tiles(page))['Batches refused']).toBe('1');
    expect(await tiles(page)).toMatchObject({ 'Batches accepted': '1', 'Records refused': '9' });
    expect(await deliveryRows(page)).toEqual([
      ['ELSE', 'erp', '0', '1', '0', '', '0 % 0 of 1 attempts'],
    ]);
    await context.close();
  });
});
