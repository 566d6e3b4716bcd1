import type { LookupAddress } from 'node:dns';
import { expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import type { Resolver } from '../../src/events/destinations/webhook/ssrf.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import {
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

const open = closedAfterEach();

/**
 * Names resolve through this stub only, to loopback: no DNS query and no packet leaves the host
 * even if the guard were broken. 10.x and 169.254.169.254 are refused by the same check on the
 * resolved address; that classification is proven without any socket in unit/ssrf.test.ts.
 */
const STUB: Record<string, LookupAddress[]> = {
  'hooks.acme.example': [{ address: '127.0.0.1', family: 4 }],
  'v6.acme.example': [{ address: '::1', family: 6 }],
  'mixed.acme.example': [
    { address: '93.184.215.14', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
};
const resolver: Resolver = async (hostname) => {
  const answer = STUB[hostname];
  if (!answer) throw Object.assign(new Error(`stub: ${hostname} unknown`), { code: 'ENOTFOUND' });
  return answer;
};

it('refuses, in production, endpoints resolving to loopback (names and literals), at connection time', async () => {
  const receiver = await startWebhookReceiver([testSecret(5)]);
  open.push(receiver);
  const port = receiver.port;
  const urls = [
    `https://hooks.acme.example:${port}/hook`,
    `https://v6.acme.example:${port}/hook`,
    `https://mixed.acme.example:${port}/hook`,
    `https://127.0.0.1:${port}/hook`,
    `https://[::1]:${port}/hook`,
  ];
  const events = testEventsConfig({ retrySchedule: [0] });
  const harness = await startEventsHarness({
    events,
    environment: 'production',
    env: { S: testSecret(5) },
    resolver,
    tenants: [
      {
        businessId: 'ACME',
        webhooks: [
          ...urls.map((url) => webhook(url, 'S')),
          // The control: the same name, allowed to reach a private network, is delivered.
          webhook(`http://hooks.acme.example:${port}/hook`, 'S', { allowPrivateNetwork: true }),
        ],
      },
    ],
  });
  open.push(harness);
  await emitEvent({
    url: AMQP_URL,
    events,
    businessId: 'ACME',
    type: 'sales-order.shipped',
    data: {},
  });
  let dead: Awaited<ReturnType<EventsHarness['deadLetters']>> = [];
  await expect
    .poll(async () => (dead = [...dead, ...(await harness.deadLetters())]).length)
    .toBe(urls.length);
  const failures = dead.map((d) => String(d.properties.headers?.['x-webhook-last-failure'])).sort();
  expect(failures).toEqual(
    [
      'Destination hooks.acme.example resolves to 127.0.0.1 (loopback); refused in production unless the webhook sets allowPrivateNetwork',
      'Destination v6.acme.example resolves to ::1 (loopback); refused in production unless the webhook sets allowPrivateNetwork',
      'Destination mixed.acme.example resolves to 127.0.0.1 (loopback); refused in production unless the webhook sets allowPrivateNetwork',
      'Destination 127.0.0.1 resolves to 127.0.0.1 (loopback); refused in production unless the webhook sets allowPrivateNetwork',
      'Destination ::1 resolves to ::1 (loopback); refused in production unless the webhook sets allowPrivateNetwork',
    ].sort(),
  );
  // Only the allowed control reached the receiver.
  await expect.poll(() => receiver.received.length).toBe(1);
});
