import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import { loadConfig } from '../../src/config.js';
import { EVENT_TYPES } from '../../src/events/catalog/index.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { signLink } from '../../src/portal/links.js';
import { readPortalSecret } from '../../src/portal/secret.js';
import { AMQP_URL } from '../support/broker.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { LogCapture } from '../support/http-app.js';
import { capture, freePort, launchChromium, signIn } from '../support/portal-browser.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * The portal's events and endpoints pages in a real browser, against the real service with its
 * own events worker on the real broker, the history on PostgreSQL, and real receivers checking
 * every signature with the `standardwebhooks` package: an emitted event shows with its attempt,
 * Resend and Send test event reach the receiver signed, and another business sees none of it and
 * can send none of it.
 */
const ALPHA_SECRET = testSecret(61);
const BETA_SECRET = testSecret(62);
const events = testEventsConfig({ retrySchedule: [0, 100] });
const temp = tempFolder('portal-events-');
const logs = new LogCapture();

let database: Awaited<ReturnType<typeof freshDatabase>>;
let service: RunningService;
let browser: Browser;
let secret: Buffer;
let alpha: WebhookReceiver;
let beta: WebhookReceiver;
let shippedId: string;
let alphaPage: Page;

const emit = (type: string, businessId = 'ALPHA') =>
  emitEvent({
    url: AMQP_URL,
    events,
    businessId,
    type,
    data: EVENT_TYPES[type]!.example as Record<string, unknown>,
  });
const linkFor = (businessId: string) =>
  `${service.url}/portal/login?token=${signLink(secret, businessId, Date.now() + 60_000)}`;
/** What `read` finds on the page once it is loaded again (the history's writer flushes apart). */
async function reloaded<T>(page: Page, read: () => Promise<T>): Promise<T> {
  await page.reload();
  return read();
}
/** The article of one event on the events page. */
const eventItem = (page: Page, id: string) =>
  page.locator('article', { has: page.getByRole('heading', { name: id }) });

beforeAll(async () => {
  database = await freshDatabase('portalevents');
  alpha = await startWebhookReceiver([ALPHA_SECRET]);
  beta = await startWebhookReceiver([BETA_SECRET]);
  mkdirSync(path.join(temp.dir, 'pipelines'));
  const hash = await hashApiKey('portal-events-unused-key');
  const tenant = (businessId: string, url: string, env: string, filters: string[]) => [
    `  - businessId: ${businessId}`,
    `    apiKeyHash: "${hash}"`,
    `    webhooks: ${JSON.stringify([{ id: 'erp', url, secret: { env }, events: filters }])}`,
  ];
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${temp.dir}/pipelines`,
      'broker: { queues: [] }',
      'history: { enabled: true, flushMs: 10 }',
      `events: ${JSON.stringify(events)}`,
      'tenants:',
      ...tenant('ALPHA', alpha.url, 'ALPHA_WEBHOOK_SECRET', ['sales-order.*']),
      ...tenant('BETA', beta.url, 'BETA_WEBHOOK_SECRET', ['**']),
      '',
    ].join('\n'),
  );
  const env = {
    INGEST_CONFIG: config,
    INGEST_ENV: 'development',
    HISTORY_URL: database.url,
    AMQP_URL,
    PORT: String(await freePort()),
    ADMIN_PORT: '0',
  };
  // Webhook secrets are read from the process's environment (as `serve` reads them), not `env`.
  vi.stubEnv('ALPHA_WEBHOOK_SECRET', ALPHA_SECRET);
  vi.stubEnv('BETA_WEBHOOK_SECRET', BETA_SECRET);
  service = await startService({ env, log: createLogger({ destination: logs }) });
  secret = readPortalSecret(loadConfig({ env }));
  browser = await launchChromium();
  shippedId = (await emit('sales-order.shipped')).id;
  await vi.waitFor(() => expect(alpha.received.map((r) => r.id)).toEqual([shippedId]), {
    timeout: 20_000,
    interval: 50,
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await Promise.all([alpha?.close(), beta?.close()]);
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
  await database?.drop();
  vi.unstubAllEnvs();
});

describe('the portal: events and endpoints', () => {
  it('shows an emitted event with its delivered attempt, and filters by type', async () => {
    ({ page: alphaPage } = await signIn(browser, linkFor('ALPHA')));
    const page = alphaPage;
    await page.waitForURL(/\/portal$/);
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
    // The history's writer flushes off the delivery path: the attempt shows once it has.
    await expect
      .poll(
        async () => {
          await page.reload();
          return eventItem(page, shippedId).locator('tbody tr').allInnerTexts();
        },
        { timeout: 15_000 },
      )
      .toEqual([expect.stringMatching(/UTC\s+erp\s+delivered\s+200\s+\d+ ms/)]);
    const response = await page.reload();
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.getByRole('heading', { level: 2 }).allInnerTexts()).toEqual([
      `sales-order.shipped ${shippedId}`,
    ]);
    await capture(page, 'events');

    await page.getByLabel('Event type').selectOption('purchase-order.received');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/type=purchase-order.received/);
    await page.getByText('No events of this type in the history.').waitFor();
  });

  it('Resend sends the event again under its own webhook-id, signed, and says where', async () => {
    const page = alphaPage;
    await page.goto(`${service.url}/portal/events`);
    await eventItem(page, shippedId).getByRole('button', { name: 'Resend' }).click();
    await page.waitForURL(/\/portal\/events$/);
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(`Event ${shippedId} sent again to erp.`);
    await expect.poll(() => alpha.received.length, { timeout: 15_000 }).toBe(2);
    const again = alpha.received[1]!;
    expect(again.id).toBe(shippedId);
    expect(again.verifiedWith).toEqual([ALPHA_SECRET]);
    expect(again.body).toMatchObject({ type: 'sales-order.shipped', businessId: 'ALPHA' });
    await capture(page, 'events-resent');
    // Shown once: the next visit has no outcome on it.
    await page.reload();
    expect(await page.getByRole('status').count()).toBe(0);

    // An event none of the endpoints takes: nothing sent, and the page says why.
    const unwanted = (await emit('purchase-order.received')).id;
    await expect
      .poll(async () => reloaded(page, () => eventItem(page, unwanted).count()), {
        timeout: 15_000,
      })
      .toBe(1);
    await eventItem(page, unwanted).getByRole('button', { name: 'Resend' }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(
        `Event ${unwanted} was not sent: None of your webhook endpoints takes purchase-order.received events now; nothing was sent.`,
      );
  });

  it('lists the endpoints without a secret, and Send test event reaches the receiver signed', async () => {
    const page = alphaPage;
    await page.getByRole('link', { name: 'Endpoints' }).click();
    await page.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
    const html = await page.content();
    expect(html).not.toContain('whsec_');
    expect(html).not.toContain(ALPHA_SECRET.slice(6, 20));
    expect(html).not.toContain(beta.url);
    // The delivery and the resend, once the history has the resend's attempt.
    await expect
      .poll(async () => reloaded(page, () => page.locator('article dl').textContent()), {
        timeout: 15_000,
      })
      .toMatch(/Delivered\s*2\s*Failed\s*0/);
    const facts = await page.locator('article dl').textContent();
    expect(facts).toContain(alpha.url);
    expect(facts).toContain('sales-order.*');
    expect(facts).toMatch(/State\s*enabled/);

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(/\/portal\/webhooks$/);
    const notice = await page.getByRole('status').textContent();
    expect(notice).toMatch(/^Test event test_[0-9a-f-]+ to erp: delivered, status 200, in \d+ ms/);
    const test = alpha.received.at(-1)!;
    expect(notice).toContain(test.id);
    expect(test.verifiedWith).toEqual([ALPHA_SECRET]);
    expect(test.body).toMatchObject({ type: 'webhook.test', businessId: 'ALPHA' });
    // Its attempt is kept: it shows among the endpoint's last attempts.
    await expect
      .poll(async () => reloaded(page, () => page.locator('article tbody').textContent()), {
        timeout: 15_000,
      })
      .toContain(test.id);
    await capture(page, 'webhooks');
  });

  it("never shows another business's events or endpoints, and refuses its POSTs: nothing sent", async () => {
    const sentBefore = alpha.received.length;
    const { page, context } = await signIn(browser, linkFor('BETA'));
    await page.waitForURL(/\/portal$/);
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByText('No events in the history.').waitFor();
    expect(await page.content()).not.toContain(shippedId);
    await page.getByRole('link', { name: 'Endpoints' }).click();
    await page.getByRole('button', { name: 'Send test event' }).waitFor();
    expect(await page.content()).not.toContain(alpha.url);
    expect(await page.locator('article dl').textContent()).toContain(beta.url);

    // Beta's own form, CSRF token and all, pointed at Alpha's event: a 404, as for an unknown one.
    await page
      .locator('article form')
      .evaluate(
        (form, id) => form.setAttribute('action', `/portal/events/${id}/resend`),
        shippedId,
      );
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Send test event' }).click(),
    ]);
    expect(refused.status()).toBe(404);
    await page.getByRole('heading', { name: 'No such event' }).waitFor();
    await capture(page, 'other-business-event-404');
    // And at Alpha's endpoint: as unknown.
    const alphaHook = await alphaPage.locator('article form').getAttribute('action');
    const csrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
    const test = await page.request.post(`${service.url}${alphaHook}`, {
      form: { csrf: csrf! },
      maxRedirects: 0,
    });
    expect(test.status()).toBe(404);
    expect(await test.text()).toContain('No such endpoint');
    await context.close();

    // Alpha's own Resend with its CSRF token changed: refused before anything is done.
    await alphaPage.goto(`${service.url}/portal/events`);
    await eventItem(alphaPage, shippedId)
      .locator('input[name="csrf"]')
      .evaluate((input) => input.setAttribute('value', 'not-the-token'));
    await eventItem(alphaPage, shippedId).getByRole('button', { name: 'Resend' }).click();
    await alphaPage.getByRole('heading', { name: 'This form was refused' }).waitFor();
    await capture(alphaPage, 'form-refused');

    // A fence: an event emitted after the refusals reaches Alpha with nothing before it.
    const fence = (await emit('sales-order.shipped')).id;
    await expect.poll(() => alpha.received.at(-1)?.id, { timeout: 15_000 }).toBe(fence);
    expect(alpha.received.slice(sentBefore).map((r) => r.id)).toEqual([fence]);
    expect(beta.received).toEqual([]);
  });
});
