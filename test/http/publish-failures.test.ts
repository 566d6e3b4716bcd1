import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { AMQP_URL } from '../support/broker.js';
import { createTestApp, type TestApp, answer } from '../support/http-app.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const orders = validRecords('sales-orders');
const open: Array<TestApp | TcpProxy> = [];
afterEach(async () => {
  for (const thing of open.splice(0)) await thing.close();
});
afterAll(async () => {
  for (const thing of open.splice(0)) await thing.close();
});

/** n distinct, valid sales orders (distinct ids, so distinct message ids). */
function manyOrders(n: number): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const order = structuredClone(orders[0]!) as { identifiers: { shipmentId: string } };
    order.identifiers.shipmentId = `SO-BULK-${i}`;
    return order;
  });
}

describe('"accepted" means the broker confirmed every message', () => {
  it('answers 503 with Retry-After when a record has no route to a queue, and reports nothing accepted', async () => {
    const t = await createTestApp({ bindingKeys: ['sales-orders.#'] });
    open.push(t);
    expect((await t.post('sales-orders', orders)).status).toBe(202);
    await t.topology.messages();

    const response = await t.post('master-data', validRecords('master-data'));
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = await answer(response);
    expect(body).toMatchObject({
      type: '/problems/publish-failed',
      status: 503,
      instance: '/api/v2/master-data',
    });
    expect(body.detail).toContain('master-data.ACME');
    expect(body).not.toHaveProperty('messageIds');
    expect(await t.topology.count()).toBe(0);

    // The unroutable kind also makes the service not ready.
    const ready = await t.admin.request('/readyz');
    expect(ready.status).toBe(503);
    expect((await answer(ready)).detail).toContain('"master-data.ACME" reaches no declared queue');
  });

  it('answers 503 when the connection is cut in the middle of a large batch; the retry delivers every record with the same ids', async () => {
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(AMQP_URL).port || 5672),
    });
    open.push(proxy);
    const t = await createTestApp({
      amqpUrl: proxy.urlFor(AMQP_URL),
      yaml: 'http:\n  maxRecordsPerBatch: 20000\n  bodyLimitBytes: 104857600\n',
    });
    open.push(t);
    const batch = manyOrders(5000);

    proxy.cutAfter(2_000_000); // well inside the ~5 MB of frames this batch needs
    const failed = await t.post('sales-orders', batch);
    expect(failed.status).toBe(503);
    expect((await answer(failed)).type).toBe('/problems/publish-failed');
    expect(failed.headers.get('retry-after')).toMatch(/^\d+$/);

    await vi.waitFor(async () => expect((await t.admin.request('/readyz')).status).toBe(200), {
      timeout: 15_000,
      interval: 100,
    });
    const retried = await t.post('sales-orders', batch);
    expect(retried.status).toBe(202);
    const { messageIds } = await answer(retried);
    expect(new Set(messageIds).size).toBe(5000);

    const delivered = await t.topology.messages();
    const ids = new Set(delivered.map((m) => m.properties.messageId));
    // Every accepted id is in the queue; copies from the cut attempt carry the same ids.
    expect(messageIds.every((id: string) => ids.has(id))).toBe(true);
    expect(ids.size).toBe(5000);
    const duplicates = delivered.length - ids.size;
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(duplicates).toBeLessThan(5000);
  });

  it('answers 503 promptly while the broker is unreachable, and 202 again once it is back', async () => {
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(AMQP_URL).port || 5672),
    });
    open.push(proxy);
    proxy.cut({ refuse: true });
    const t = await createTestApp({ amqpUrl: proxy.urlFor(AMQP_URL) });
    open.push(t);

    const started = Date.now();
    const response = await t.post('sales-orders', orders);
    expect(response.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await t.admin.request('/readyz')).status).toBe(503);

    proxy.restore();
    await vi.waitFor(async () => expect((await t.admin.request('/readyz')).status).toBe(200), {
      timeout: 15_000,
      interval: 100,
    });
    expect((await t.post('sales-orders', orders)).status).toBe(202);
    expect(await t.topology.count()).toBe(3);
  });
});

describe('sandbox', () => {
  it('validates like production, accepts any well-formed credentials, publishes nothing and says so', async () => {
    const t = await createTestApp({ environment: 'sandbox' });
    open.push(t);
    const auth = `Basic ${Buffer.from('SANDBOXCO:anything').toString('base64')}`;
    const own = orders.map((o) => ({
      ...(o as object),
      identifiers: { ...(o as { identifiers: object }).identifiers, businessId: 'SANDBOXCO' },
    }));

    const accepted = await t.post('sales-orders', own, { auth });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('ingest-environment')).toBe('sandbox');
    expect((await answer(accepted)).messageIds).toHaveLength(3);

    const rejected = await t.post('sales-orders', orders, { auth }); // businessId ACME ≠ SANDBOXCO
    expect(rejected.status).toBe(400);
    expect(rejected.headers.get('ingest-environment')).toBe('sandbox');
    expect((await t.post('sales-orders', own, { auth: 'Basic nonsense' })).status).toBe(401);

    expect(t.publisher.name).toBe('none');
    expect(await t.topology.count()).toBe(0);
  });
});
