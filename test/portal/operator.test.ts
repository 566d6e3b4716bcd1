import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { CURRENT_COST, hashApiKey } from '../../src/api-keys.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import { EVENT_TYPES } from '../../src/events/catalog/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { capture, launchChromium, newContext, signIn } from '../support/portal-browser.js';
import { type PortalService, startPortalService } from '../support/portal-service.js';
import { tempFolder } from '../support/temp.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * The operator's portal in a real browser, against the real service (history on PostgreSQL, its
 * events worker and drop runners on the real broker): an operator signs in with the password
 * whose hash is configured, sees every business's batches, reprocesses a drop's failed input
 * and replays a dead-lettered event; a business finds none of it, and every operator POST needs
 * our Origin and its CSRF token.
 */
const PASSWORD = 'operator-test-password-1';
const SECRET = testSecret(71);
const CSV_HEADER = readFileSync(
  new URL('../../fixtures/demo/sales-orders.csv', import.meta.url),
  'utf8',
).split('\n')[0]!;
const DEVELOPMENT = parse(
  readFileSync(new URL('../../config/development.yaml', import.meta.url), 'utf8'),
) as { onboarding: { DEMO: Record<string, unknown> } };
const events = testEventsConfig({ retrySchedule: [0, 100] });
const temp = tempFolder('portal-operator-');

let portal: PortalService;
let browser: Browser;
let receiver: WebhookReceiver;
let records: TestTopology;
/** The receiver answers 500 while this is true. */
let failing = true;
let operator: { context: BrowserContext; page: Page };

const url = (route: string) => `${portal.service.url}${route}`;
/** The drop folders' rows on the drops page, by pipeline. */
const dropItem = (page: Page, pipeline: string) =>
  page.locator('article', { has: page.getByRole('heading', { name: pipeline }) });
/** A drop's rows of inputs whose last try failed. */
const failures = (page: Page, pipeline: string) =>
  dropItem(page, pipeline)
    .getByRole('table', { name: /whose last try failed/ })
    .locator('tbody tr');
/** A drop's inputs by state, as `state count` pairs. */
const byState = async (page: Page, pipeline: string) => {
  const table = dropItem(page, pipeline).getByRole('table', { name: /Inputs by state/ });
  const states = await table.locator('th').allInnerTexts();
  const counts = await table.locator('td').allInnerTexts();
  return Object.fromEntries(states.map((state, i) => [state, Number(counts[i])]));
};

beforeAll(async () => {
  receiver = await startWebhookReceiver([SECRET]);
  receiver.setBehaviour(() => (failing ? 500 : 200));
  records = await declareTestTopology({ bindingKeys: ['#'], prefix: 'portal-operator' });
  vi.stubEnv('OTHER_WEBHOOK_SECRET', SECRET);
  mkdirSync(path.join(temp.dir, 'pipelines'));
  const pipeline = (name: string, businessId: string, extra: Record<string, unknown> = {}) => {
    const drop = path.join(temp.dir, name);
    mkdirSync(drop, { recursive: true });
    temp.write(
      `pipelines/${name}.yaml`,
      stringify({
        name,
        businessId,
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: drop },
        readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
        ...extra,
      }),
    );
    return drop;
  };
  // OTHER has no onboarding profile yet: its v1 file is refused until one is configured.
  const fixable = pipeline('ops-fixable', 'OTHER');
  // One try only: DEMO's file with a quantity that is no number is dead at once.
  const deadDrop = pipeline('ops-dead', 'DEMO', { retry: { maxAttempts: 1 } });
  portal = await startPortalService({
    label: 'portaloperator',
    dir: temp.dir,
    config: [
      `broker: ${JSON.stringify({ exchange: records.exchange, queues: [{ name: records.queue, bindingKeys: ['#'] }] })}`,
      `events: ${JSON.stringify(events)}`,
      `portal: ${JSON.stringify({ operators: [{ name: 'ops', passwordHash: await hashApiKey(PASSWORD, CURRENT_COST) }] })}`,
      'tenants:',
      // Not the public demo key: that one is refused on a real broker.
      '  - businessId: DEMO',
      `    apiKeyHash: "${await hashApiKey('operator-test-demo-key')}"`,
      '  - businessId: OTHER',
      `    apiKeyHash: "${await hashApiKey('operator-test-unused-key')}"`,
      `    webhooks: ${JSON.stringify([{ id: 'erp', url: receiver.url, secret: { env: 'OTHER_WEBHOOK_SECRET' }, events: ['**'] }])}`,
    ],
    env: { AMQP_URL },
  });
  browser = await launchChromium();
  writeFileSync(
    path.join(fixable, 'other-orders.csv'),
    `${CSV_HEADER}\nOTHER,SO-OPS-1,2026-02-03,1,SKU-1,2,EA,9.99\n`,
  );
  writeFileSync(
    path.join(deadDrop, 'demo-bad.csv'),
    `${CSV_HEADER}\nDEMO,SO-OPS-9,2026-02-03,1,SKU-1,many,EA,9.99\n`,
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await portal?.stop();
  await Promise.all([receiver?.close(), records?.cleanup()]);
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
  vi.unstubAllEnvs();
});

async function signInAsOperator(name: string, password: string): Promise<Page> {
  const context = await newContext(browser);
  const page = await context.newPage();
  await page.goto(url('/portal/operator'));
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

describe('the operator portal', () => {
  it('signs an operator in with the configured password; a wrong one is refused without saying which part', async () => {
    const page = await signInAsOperator('ops', 'not-the-password');
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'The name or the password is not right. Try again.',
    );
    await capture(page, 'operator-sign-in');
    // A name nobody has: the same words.
    await page.getByLabel('Name').fill('nobody');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('The name or the password is not right. Try again.');
    expect(await page.context().cookies()).toEqual([]);
    await page.context().close();

    const signedIn = await signInAsOperator('ops', PASSWORD);
    await signedIn.waitForURL(/\/portal$/);
    await signedIn.getByText('Operator ops').waitFor();
    operator = { context: signedIn.context(), page: signedIn };
  });

  it("shows every business's batches, and one business's once chosen", async () => {
    const { page } = operator;
    // Whose each batch is, and where it came from.
    const listed = async () =>
      Promise.all(
        (await page.locator('tbody tr').all()).map(async (row) => {
          const cells = await row.locator('td').allInnerTexts();
          return `${cells[1]}: ${cells[3]}`;
        }),
      );
    // Both drops' refusals, once the history has them.
    await expect
      .poll(
        async () => {
          await page.goto(url('/portal/batches'));
          return (await listed()).sort();
        },
        { timeout: 20_000 },
      )
      .toEqual([
        'DEMO: File demo-bad.csv (pipeline ops-dead)',
        'OTHER: File other-orders.csv (pipeline ops-fixable)',
      ]);
    await capture(page, 'operator-batches');
    await page.getByLabel('Business').selectOption('OTHER');
    await page.getByRole('button', { name: 'View' }).click();
    await page.waitForURL(/\/portal$/);
    await page.goto(url('/portal/batches'));
    expect(await listed()).toEqual(['OTHER: File other-orders.csv (pipeline ops-fixable)']);
    await page.getByLabel('Business').selectOption('');
    await page.getByRole('button', { name: 'View' }).click();
    await page.waitForURL(/\/portal$/);
    await page.goto(url('/portal/batches'));
    await expect.poll(async () => (await listed()).length).toBe(2);
  });

  it('reprocesses a failed input once its business is onboarded; a dead one is never reprocessed', async () => {
    const { page } = operator;
    await page.getByRole('link', { name: 'Drops' }).click();
    await page.getByRole('heading', { name: 'Drops', level: 1 }).waitFor();
    const fixable = dropItem(page, 'ops-fixable');
    const dead = dropItem(page, 'ops-dead');
    expect(await failures(page, 'ops-fixable').locator('td').allInnerTexts()).toEqual([
      'failed/other-orders.csv',
      'failed',
      '1',
      '',
      expect.stringContaining('failed validation'),
      'Reprocess',
    ]);
    expect(await failures(page, 'ops-dead').locator('td').allInnerTexts()).toEqual([
      'failed/demo-bad.csv',
      'dead',
      '1',
      '',
      expect.stringContaining('failed validation'),
      'Never reprocessed (attempts used up)',
    ]);
    expect(await dead.getByRole('button', { name: /Reprocess/ }).count()).toBe(0);
    expect(await byState(page, 'ops-dead')).toMatchObject({ dead: 1, failed: 0 });
    expect(await byState(page, 'ops-fixable')).toMatchObject({ failed: 1, receipted: 0 });
    await capture(page, 'operator-drops');

    // OTHER's profile configured, as an operator would, and the configuration reloaded.
    appendFileSync(
      portal.env.INGEST_CONFIG!,
      stringify({
        onboarding: {
          OTHER: {
            ...DEVELOPMENT.onboarding.DEMO,
            'sales-orders': {
              ...(DEVELOPMENT.onboarding.DEMO['sales-orders'] as object),
              'identifiers.ownerId': 'OTHER',
            },
          },
        },
      }),
    );
    expect(portal.service.reload()).toBe(true);
    await fixable.getByRole('button', { name: 'Reprocess other-orders.csv' }).click();
    await page.waitForURL(/\/portal\/operator\/drops$/);
    expect(await page.getByRole('status').textContent()).toMatch(
      /^Reprocessed in ops-fixable: accepted \(attempt 2\)\.$/,
    );
    await fixable.getByText('No input of this drop has failed.').waitFor();
    expect(await byState(page, 'ops-fixable')).toMatchObject({ failed: 0, receipted: 1 });
    // The dead one was left as it was.
    expect(await byState(page, 'ops-dead')).toMatchObject({ dead: 1 });
    // Its record reached the broker.
    await expect.poll(() => records.count(), { timeout: 10_000 }).toBe(1);
  });

  it('replays a dead-lettered event, and its receiver gets it', async () => {
    const { page } = operator;
    const type = 'sales-order.shipped';
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'OTHER',
      type,
      data: EVENT_TYPES[type]!.example as Record<string, unknown>,
    });
    const row = page.locator('tbody tr', { hasText: id });
    await expect
      .poll(
        async () => {
          await page.goto(url('/portal/operator/dead-letters'));
          return row.count();
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    expect((await row.locator('td').allInnerTexts()).slice(2, 7)).toEqual([
      'sales-order.shipped',
      'OTHER',
      'erp',
      'attempts-exhausted',
      '2',
    ]);
    await capture(page, 'operator-dead-letters');
    const attempts = receiver.received.length;
    failing = false;
    await row.getByRole('button', { name: `Replay ${id}` }).click();
    await page.waitForURL(/\/portal\/operator\/dead-letters$/);
    expect(await page.getByRole('status').textContent()).toBe(
      `Event ${id} is back in the delivery queue.`,
    );
    await expect
      .poll(() => receiver.received.slice(attempts).map((r) => r.id), { timeout: 15_000 })
      .toEqual([id]);
    expect(await page.locator('tbody tr', { hasText: id }).count()).toBe(0);
  });

  it("resends a business's event and sends a test event to its endpoint, on its behalf", async () => {
    const { page } = operator;
    const replayed = receiver.received.at(-1)!.id;
    const before = receiver.received.length;
    // Every business's events: this one says whose it is.
    await page.goto(url('/portal/events'));
    const item = page.locator('article', { has: page.getByRole('heading', { name: replayed }) });
    expect(await item.locator('dl dd').first().textContent()).toBe('OTHER');
    await item.getByRole('button', { name: 'Resend' }).click();
    await page.waitForURL(/\/portal\/events$/);
    expect(await page.getByRole('status').textContent()).toBe(
      `Event ${replayed} sent again to erp.`,
    );
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(before + 1);
    expect(receiver.received.at(-1)!.id).toBe(replayed);

    // Endpoints are one business's: chosen first.
    await page.getByRole('link', { name: 'Endpoints' }).click();
    await page.getByText('Endpoints belong to one business').waitFor();
    await capture(page, 'operator-endpoints-choose');
    await page.getByLabel('Business').selectOption('OTHER');
    await page.getByRole('button', { name: 'View' }).click();
    await page.getByRole('link', { name: 'Endpoints' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(/\/portal\/webhooks$/);
    expect(await page.getByRole('status').textContent()).toMatch(/: delivered, status 200, in/);
    expect(receiver.received.at(-1)!.body.type).toBe('webhook.test');
    await page.getByLabel('Business').selectOption('');
    await page.getByRole('button', { name: 'View' }).click();
    await page.waitForURL(/\/portal$/);
  });

  it('is not there for a business: no page, no action, no link to one', async () => {
    const { page, context } = await signIn(browser, portal.link('DEMO'));
    await page.waitForURL(/\/portal$/);
    expect(await page.getByRole('link', { name: 'Drops' }).count()).toBe(0);
    expect(await page.getByLabel('Business').count()).toBe(0);
    for (const route of ['/portal/operator/drops', '/portal/operator/dead-letters']) {
      const answer = await page.goto(url(route));
      expect(answer?.status()).toBe(404);
      await page.getByRole('heading', { name: 'No such page' }).waitFor();
    }
    // Its own CSRF token, our Origin: still not found, and nothing done.
    const csrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
    for (const route of [
      '/portal/operator/drops/ops-dead/0000/reprocess',
      '/portal/operator/dead-letters/evt_1/replay',
      '/portal/operator/business',
    ]) {
      const answer = await page.request.post(url(route), {
        form: { csrf: csrf!, business: 'OTHER' },
        headers: { origin: new URL(portal.service.url).origin },
        maxRedirects: 0,
      });
      expect(answer.status(), route).toBe(404);
      expect(await answer.text()).toContain('No such page');
    }
    await page.goto(url('/portal/batches'));
    expect(await page.locator('tbody tr td:nth-child(3)').allInnerTexts()).toEqual([
      'File demo-bad.csv (pipeline ops-dead)',
    ]);
    await context.close();
  });

  it("refuses an operator's POST from another site or without its CSRF token, and signs out", async () => {
    const { page } = operator;
    await page.goto(url('/portal/operator/drops'));
    const csrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
    const post = (route: string, form: Record<string, string>, origin: string) =>
      page.request.post(url(route), { form, headers: { origin }, maxRedirects: 0 });
    const ours = new URL(portal.service.url).origin;
    const foreign = await post(
      '/portal/operator/business',
      { csrf: csrf!, business: 'OTHER' },
      'https://evil.example',
    );
    expect(foreign.status()).toBe(403);
    const forged = await post(
      '/portal/operator/business',
      { csrf: 'forged', business: 'OTHER' },
      ours,
    );
    expect(forged.status()).toBe(403);
    const signInElsewhere = await page.request.post(url('/portal/operator'), {
      form: { name: 'ops', password: PASSWORD },
      headers: { origin: 'https://evil.example' },
      maxRedirects: 0,
    });
    expect(signInElsewhere.status()).toBe(403);
    // Neither changed the choice: every business's batches still.
    await page.goto(url('/portal'));
    expect(await page.getByLabel('Business').inputValue()).toBe('');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    expect((await page.goto(url('/portal/operator/drops')))?.status()).toBe(404);
  });
});
