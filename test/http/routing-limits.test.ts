import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';

// A record field in the routing-key template can make a key longer than AMQP carries (255 bytes):
// that is the input's fault, so a 400 naming the field, never a 503 the client would retry for ever.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ routingKey: '{kind}.{businessId}.{identifiers.site}' });
});
afterAll(() => t.close());

describe('a routing key longer than AMQP allows', () => {
  it('is a 400 naming the record and the field; the batch publishes nothing', async () => {
    const [first, second] = validRecords('sales-orders') as Array<{
      identifiers: { site: string };
    }>;
    const long = structuredClone(second!);
    long.identifiers.site = 'S'.repeat(300);
    const response = await t.post('sales-orders', [first, long]);
    expect(response.status).toBe(400);
    const body = await answer(response);
    expect(body.type).toBe('/problems/validation-failed');
    expect(body.errors).toEqual([
      { index: 1, errors: [expect.stringMatching(/^identifiers\.site: Too long to route: /)] },
    ]);
    expect(await t.topology.count()).toBe(0);
  });

  it('routes a site of ordinary length as before', async () => {
    const response = await t.post('sales-orders', validRecords('sales-orders').slice(0, 1));
    expect(response.status).toBe(202);
    const [message] = await t.topology.messages();
    expect(message!.routingKey).toMatch(/^sales-orders\.ACME\.[^.]+$/);
  });
});
