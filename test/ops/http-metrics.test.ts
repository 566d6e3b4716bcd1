import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { createTestApp, type TestApp } from '../support/http-app.js';

/** The value of one series in Prometheus text, e.g. `name{a="1",b="2"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const orders = validRecords('sales-orders');

describe('HTTP answers in /metrics, by route template and status', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      yaml: 'http:\n  bodyLimitBytes: 20000\n  abuse:\n    rateLimit: { requests: 4, windowSeconds: 60 }',
    });
  });
  afterAll(() => t.close());
  const scrape = async () => (await t.admin.request('/metrics')).text();

  it('counts 202, 401, 413, 415 and 429 with the route template, never the raw URL; times them; business bounded', async () => {
    expect((await t.post('sales-orders', orders.slice(0, 1))).status).toBe(202);
    expect((await t.post('sales-orders', [], { auth: null })).status).toBe(401);
    expect((await t.post('sales-orders', null, { raw: `[${'1,'.repeat(15_000)}1]` })).status).toBe(
      413,
    );
    expect(
      (await t.post('sales-orders', null, { raw: '[]', headers: { 'content-type': 'text/xml' } }))
        .status,
    ).toBe(415);
    expect((await t.post('sales-orders', orders.slice(0, 1))).status).toBe(202); // the 4th: the last allowed
    expect((await t.post('sales-orders', orders.slice(0, 1))).status).toBe(429);
    expect((await t.post('/api/v1/customer/ACME-42/stock', null)).status).toBe(405);
    expect((await t.app.request('/no/such/path/4711')).status).toBe(404);

    const text = await scrape();
    const route = '/api/v2/sales-orders';
    const requests = (status: number, business: string, path = route, method = 'POST') =>
      sample(
        text,
        `warehouse_ingest_http_requests_total{route="${path}",method="${method}",status="${status}",business="${business}"}`,
      );
    expect(requests(202, 'ACME')).toBe(2);
    expect(requests(401, 'none')).toBe(1);
    expect(requests(413, 'ACME')).toBe(1);
    expect(requests(415, 'ACME')).toBe(1);
    expect(requests(429, 'ACME')).toBe(1);
    expect(requests(405, 'none', '/api/v1/customer/:accountId/stock')).toBe(1);
    expect(requests(404, 'none', 'unmatched', 'GET')).toBe(1);
    expect(text).not.toContain('ACME-42');
    expect(text).not.toContain('4711');
    for (const status of [401, 413, 415, 429])
      expect(
        sample(
          text,
          `warehouse_ingest_http_request_duration_seconds_count{route="${route}",method="POST",status="${status}"}`,
        ),
        String(status),
      ).toBe(1);
  });

  it('labels a business not in the configuration as other (the sandbox takes any credentials)', async () => {
    const sandbox = await createTestApp({ environment: 'sandbox', amqpUrl: null });
    try {
      const auth = `Basic ${Buffer.from('INVENTED-1:any').toString('base64')}`;
      // Records of another business: 400 (tenancy), after authentication, so the business is known.
      expect((await sandbox.post('sales-orders', orders.slice(0, 1), { auth })).status).toBe(400);
      const text = await (await sandbox.admin.request('/metrics')).text();
      expect(text).toContain(
        'warehouse_ingest_http_requests_total{route="/api/v2/sales-orders",method="POST",status="400",business="other"} 1',
      );
      expect(text).not.toContain('INVENTED-1');
    } finally {
      await sandbox.close();
    }
  });

  it('says which build runs: build_info with the package version and the Node.js version', async () => {
    const text = await scrape();
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(
      sample(text, `warehouse_ingest_build_info{version="${version}",node="${process.version}"}`),
    ).toBe(1);
  });
});
