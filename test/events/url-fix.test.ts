/**
 * A webhook's URL fixed while its events wait on their retry schedule (a reload): the copies
 * parked after failing at the old URL get the whole schedule at the new one, so the new URL is
 * always tried more than once before anything is dead-lettered. On the real broker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { resolveEndpoints } from '../../src/events/subscriptions.js';
import { AMQP_URL } from '../support/broker.js';
import {
  type EventsHarness,
  startEventsHarness,
  testEventsConfig,
  webhook,
} from '../support/events-harness.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const SECRET = testSecret(91);
// Three attempts: on arrival, 100 ms later, then 3 s later (the time the test fixes the URL in).
const events = testEventsConfig({ retrySchedule: [0, 100, 3000] });
const open: Array<EventsHarness | WebhookReceiver> = [];
afterAll(async () => {
  for (const item of open.reverse()) await item.close();
});

describe('a webhook URL fixed between two attempts', () => {
  it('gives the parked event its whole schedule at the new URL', async () => {
    const broken = await startWebhookReceiver([SECRET]);
    const fixed = await startWebhookReceiver([SECRET]);
    open.push(broken, fixed);
    broken.setBehaviour(() => 500);
    // The new URL fails once too (a deploy still warming up), then takes it.
    fixed.setBehaviour((_, nth) => (nth === 1 ? 503 : 200));
    const env = { URL_FIX_SECRET: SECRET };
    const tenants = (url: string) => [
      { businessId: 'URLFIX', webhooks: [webhook(url, 'URL_FIX_SECRET', { id: 'main' })] },
    ];
    const harness = await startEventsHarness({ events, env, tenants: tenants(broken.url) });
    open.push(harness);

    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'URLFIX',
      type: 'sales-order.shipped',
      data: { orderNumber: 'SO-URL' },
    });
    await expect.poll(() => broken.received.length, { timeout: 10_000 }).toBe(2);
    // The operator fixes the URL (a reload): the event is parked for its third and last attempt.
    harness.consumer.setWebhooks(
      resolveEndpoints({ environment: 'development', tenants: tenants(fixed.url), events }, env),
    );

    await expect.poll(() => fixed.received.map((r) => r.id), { timeout: 15_000 }).toEqual([id, id]);
    expect(broken.received).toHaveLength(2);
    expect(await harness.deadCount()).toBe(0);
  }, 30_000);
});
