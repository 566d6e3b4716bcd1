import { connect } from 'amqplib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import { EVENT_TYPES } from '../../src/events/catalog/index.js';
import type { RunningService } from '../../src/main.js';
import { AMQP_URL } from '../support/broker.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { capture, launchChromium, reloaded, signIn } from '../support/portal-browser.js';
import { type PortalService, startPortalService } from '../support/portal-service.js';
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

let portal: PortalService;
let service: RunningService;
let browser: Browser;
let alpha: WebhookReceiver;
let beta: WebhookReceiver;
let shippedId: string;
let alphaPage: Page;
/** Between the service and the broker, so a test can take the broker away from it alone. */
let proxy: TcpProxy;

const emit = (type: string, businessId = 'ALPHA') => {
  const data = EVENT_TYPES[type]!.example as Record<string, unknown>;
  return emitEvent({ url: AMQP_URL, events, businessId, type, data });
};
/** The article of one event on the events page. */
const eventItem = (page: Page, id: string) =>
  page.locator('article', { has: page.getByRole('heading', { name: id }) });

beforeAll(async () => {
  const broker = new URL(AMQP_URL);
  proxy = await startTcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
  alpha = await startWebhookReceiver([ALPHA_SECRET]);
  beta = await startWebhookReceiver([BETA_SECRET]);
  const hash = await hashApiKey('portal-events-unused-key');
  const tenant = (businessId: string, url: string, env: string, filters: string[]) => [
    `  - businessId: ${businessId}`,
    `    apiKeyHash: "${hash}"`,
    `    webhooks: ${JSON.stringify([{ id: 'erp', url, secret: { env }, events: filters }])}`,
  ];
  // Webhook secrets are read from the process's environment (as `serve` reads them), not `env`.
  vi.stubEnv('ALPHA_WEBHOOK_SECRET', ALPHA_SECRET);
  vi.stubEnv('BETA_WEBHOOK_SECRET', BETA_SECRET);
  portal = await startPortalService({
    label: 'portalevents',
    dir: temp.dir,
    // With a broker and webhooks configured, the service runs its own events worker.
    config: [
      'broker: { queues: [] }',
      `events: ${JSON.stringify(events)}`,
      'tenants:',
      ...tenant('ALPHA', alpha.url, 'ALPHA_WEBHOOK_SECRET', ['sales-order.*']),
      ...tenant('BETA', beta.url, 'BETA_WEBHOOK_SECRET', ['**']),
    ],
    env: { AMQP_URL: proxy.urlFor(AMQP_URL) },
  });
  service = portal.service;
  browser = await launchChromium();
  shippedId = (await emit('sales-order.shipped')).id;
  await vi.waitFor(() => expect(alpha.received.map((r) => r.id)).toEqual([shippedId]), {
    timeout: 20_000,
    interval: 50,
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await portal?.stop();
  await Promise.all([alpha?.close(), beta?.close(), proxy?.close()]);
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
  vi.unstubAllEnvs();
});

describe('the portal: events and endpoints', () => {
  it('shows an emitted event with its delivered attempt, and filters by type', async () => {
    ({ page: alphaPage } = await signIn(browser, portal.link('ALPHA')));
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
    expect(await page.locator('article.item h2').allInnerTexts()).toEqual([
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

    // An endpoint answering 500: the page says the test failed, with the status and the answer.
    alpha.setBehaviour(() => 500);
    try {
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.waitForURL(/\/portal\/webhooks$/);
      await expect
        .poll(() => page.getByRole('status').textContent())
        .toMatch(/^Test event test_[0-9a-f-]+ to erp: failed, status 500, in \d+ ms/);
    } finally {
      alpha.setBehaviour(() => 200);
    }
    await expect
      .poll(async () => reloaded(page, () => page.locator('article dl').textContent()), {
        timeout: 15_000,
      })
      .toMatch(/Delivered\s*3\s*Failed\s*1/);
  });

  it("never shows another business's events or endpoints, and refuses its POSTs: nothing sent", async () => {
    const sentBefore = alpha.received.length;
    const betaEvent = (await emit('sales-order.shipped', 'BETA')).id;
    const { page, context } = await signIn(browser, portal.link('BETA'));
    await page.waitForURL(/\/portal$/);
    await page.getByRole('link', { name: 'Events' }).click();
    // Its own event only, once the history has it.
    await expect
      .poll(async () => reloaded(page, () => page.locator('article.item h2').allTextContents()), {
        timeout: 15_000,
      })
      .toEqual([`sales-order.shipped ${betaEvent}`]);
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
    expect(beta.received.map((r) => r.id)).toEqual([betaEvent]);
  });

  it("pages through the events with the API's cursor, newest first", async () => {
    const page = alphaPage;
    const headings = () => page.locator('article.item h2').allTextContents();
    // shipped, purchase-order, two tests, the fence: five, once the fence is in the history.
    await expect
      .poll(
        async () => {
          await page.goto(`${service.url}/portal/events`);
          return (await headings()).length;
        },
        { timeout: 15_000 },
      )
      .toBe(5);
    const all = await headings();
    const seen: string[] = [];
    await page.goto(`${service.url}/portal/events?limit=2`);
    for (;;) {
      seen.push(...(await headings()));
      const older = page.getByRole('link', { name: 'Older events' });
      if ((await older.count()) === 0) break;
      await older.click();
      await page.waitForURL(/cursor=/);
    }
    expect(seen).toEqual(all);
    expect(all.at(-1)).toBe(`sales-order.shipped ${shippedId}`);
    await page.getByRole('link', { name: 'Newest events' }).click();
    await page.waitForURL(/\/portal\/events\?limit=2$/);
    expect(await headings()).toEqual(all.slice(0, 2));
  });

  it('Resend while the broker is away says so and sends nothing; once it is back, Resend sends', async () => {
    const page = alphaPage;
    await page.goto(`${service.url}/portal/events`);
    const before = alpha.received.length;
    proxy.cut({ refuse: true });
    try {
      await eventItem(page, shippedId).getByRole('button', { name: 'Resend' }).click();
      await page.waitForURL(/\/portal\/events$/);
      await expect
        .poll(() => page.getByRole('status').textContent())
        .toMatch(
          new RegExp(
            `^Event ${shippedId} could not be sent just now \\([^)]*[^.]\\)\\. Try again in a minute\\.$`,
          ),
        );
      await capture(page, 'events-resend-broker-away');
    } finally {
      proxy.restore();
    }
    expect(alpha.received.length).toBe(before);
    // The worker reconnects by itself; a Resend then goes through.
    await expect
      .poll(
        async () => {
          await page.goto(`${service.url}/portal/events`);
          await eventItem(page, shippedId).getByRole('button', { name: 'Resend' }).click();
          await page.waitForURL(/\/portal\/events$/);
          return page.getByRole('status').textContent();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(`Event ${shippedId} sent again to erp.`);
    await expect.poll(() => alpha.received.length, { timeout: 15_000 }).toBe(before + 1);
    expect(alpha.received.at(-1)!.id).toBe(shippedId);
  }, 90_000);
});
