/**
 * The portal's two buttons (Resend, Send test event) pass the partner API's own limits: each press
 * takes one request of the business's rate limit, from the same bucket the API's calls take, and
 * holds one slot of its bulkhead while it runs. Past them the portal answers a 429 page and sends
 * nothing. Against the real service, its events worker on the real broker and its history on
 * PostgreSQL.
 */
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import { EVENT_TYPES } from '../../src/events/catalog/index.js';
import { AMQP_URL } from '../support/broker.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { type PortalService, startPortalService } from '../support/portal-service.js';
import { tempFolder } from '../support/temp.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const ALPHA_SECRET = testSecret(71);
const BETA_SECRET = testSecret(72);
const API_KEY = 'portal-limits-api-key-5c1e';
// One at a time, in queue order: an event emitted after the presses arrives after anything they published.
const events = testEventsConfig({
  retrySchedule: [0, 100],
  prefetch: 1,
  concurrencyPerEndpoint: 1,
});
const temp = tempFolder('portal-limits-');

let portal: PortalService;
let alpha: WebhookReceiver;
let beta: WebhookReceiver;

const emit = (type: string, businessId: string) =>
  emitEvent({
    url: AMQP_URL,
    events,
    businessId,
    type,
    data: EVENT_TYPES[type]?.example as Record<string, unknown>,
  });

/** A business's session cookie, its CSRF token and its endpoints page, signed in with a link as a partner is. */
async function signIn(
  businessId: string,
): Promise<{ cookie: string; csrf: string; endpointsPage: string }> {
  const token = new URL(portal.link(businessId)).searchParams.get('token') ?? '';
  const answer = await fetch(`${portal.service.url}/portal/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
    redirect: 'manual',
  });
  const cookie = answer.headers.get('set-cookie')?.split(';')[0] ?? '';
  const form = await (
    await fetch(`${portal.service.url}/portal/webhooks`, { headers: { cookie } })
  ).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(form)?.[1] ?? '';
  expect(cookie).toMatch(/^portal_session=/);
  expect(csrf).not.toBe('');
  return { cookie, csrf, endpointsPage: form };
}

const press = (session: { cookie: string; csrf: string }, path: string) =>
  fetch(`${portal.service.url}${path}`, {
    method: 'POST',
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      origin: portal.service.url,
    },
    body: new URLSearchParams({ csrf: session.csrf }),
    redirect: 'manual',
  });

beforeAll(async () => {
  alpha = await startWebhookReceiver([ALPHA_SECRET]);
  beta = await startWebhookReceiver([BETA_SECRET]);
  const hash = await hashApiKey(API_KEY);
  const tenant = (businessId: string, url: string, env: string) => [
    `  - businessId: ${businessId}`,
    `    apiKeyHash: "${hash}"`,
    `    webhooks: ${JSON.stringify([{ id: 'erp', url, secret: { env }, events: ['**'] }])}`,
  ];
  vi.stubEnv('ALPHA_LIMITS_SECRET', ALPHA_SECRET);
  vi.stubEnv('BETA_LIMITS_SECRET', BETA_SECRET);
  portal = await startPortalService({
    label: 'portallimits',
    dir: temp.dir,
    config: [
      'broker: { queues: [] }',
      `events: ${JSON.stringify(events)}`,
      // A refill so slow that no token comes back while the test runs.
      'http: { abuse: { rateLimit: { requests: 3, windowSeconds: 3600 }, maxInFlightBatches: 1 } }',
      'tenants:',
      ...tenant('ALPHA', alpha.url, 'ALPHA_LIMITS_SECRET'),
      ...tenant('BETA', beta.url, 'BETA_LIMITS_SECRET'),
    ],
    env: { AMQP_URL },
  });
}, 60_000);

afterAll(async () => {
  beta?.release();
  await portal?.stop();
  await Promise.all([alpha?.close(), beta?.close()]);
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
  vi.unstubAllEnvs();
});

describe("the portal's buttons within the business's limits", () => {
  it('Resend takes the rate limit the API takes: past it a 429 page, nothing published, and the API refused too', async () => {
    const shipped = (await emit('sales-order.shipped', 'ALPHA')).id;
    await vi.waitFor(() => expect(alpha.received.map((r) => r.id)).toEqual([shipped]), {
      timeout: 20_000,
      interval: 50,
    });
    const session = await signIn('ALPHA');
    // The history's writer flushes off the delivery path: the event is resent once it is there.
    await expect
      .poll(
        async () =>
          (
            await fetch(`${portal.service.url}/portal/events`, {
              headers: { cookie: session.cookie },
            })
          ).text(),
        { timeout: 15_000 },
      )
      .toContain(shipped);

    const path = `/portal/events/${encodeURIComponent(shipped)}/resend`;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await press(session, path)).status);
    expect(statuses).toEqual([303, 303, 303, 429, 429]);

    const refused = await press(session, path);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('ratelimit-policy')).toBe('"default";q=3;w=3600');
    expect(refused.headers.get('content-type')).toContain('text/html');
    const text = await refused.text();
    expect(text).toContain('<h1>Too many requests</h1>');
    expect(text).toContain('This business is over its request rate limit');
    expect(text).toContain('Nothing was sent.');

    // The same bucket: the API's own resend is over the limit as well.
    const api = await fetch(`${portal.service.url}/api/v2/events/${shipped}/resend`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`ALPHA:${API_KEY}`).toString('base64')}` },
    });
    expect(api.status).toBe(429);

    // Nothing more published: an event emitted after the presses arrives after all they sent.
    const marker = (await emit('sales-order.shipped', 'ALPHA')).id;
    await vi.waitFor(() => expect(alpha.received.map((r) => r.id)).toContain(marker), {
      timeout: 20_000,
      interval: 50,
    });
    expect(alpha.received.map((r) => r.id)).toEqual([shipped, shipped, shipped, shipped, marker]);
  });

  it("Send test event holds a slot of the business's bulkhead: a second press meanwhile is a 429 page", async () => {
    const session = await signIn('BETA');
    const test = /action="(\/portal\/webhooks\/[^"]+\/test)"/.exec(session.endpointsPage)?.[1];
    expect(test).toBeDefined();
    const path = test ?? '';
    beta.setBehaviour(() => 'hang');
    const first = press(session, path);
    await vi.waitFor(() => expect(beta.held).toBe(1), { timeout: 10_000, interval: 20 });
    const second = await press(session, path);
    expect(second.status).toBe(429);
    expect(await second.text()).toContain('at most 1 at once');
    expect(beta.received).toHaveLength(1);
    beta.release();
    expect((await first).status).toBe(303);
  });
});
