import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import { validRecords } from '../records/fixtures.js';
import { createTestApp, type TestApp } from '../support/http-app.js';

/** The value of one series in Prometheus text, e.g. `name{a="1",b="2"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(t: TestApp): Promise<string> {
  const response = await t.admin.request('/metrics');
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return response.text();
}

const orders = validRecords('sales-orders');
const accepted = (kind: string, business = 'ACME') =>
  `{outcome="accepted",kind="${kind}",source="http",business="${business}"}`;

describe('GET /metrics (RabbitMQ publisher)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('counts accepted and rejected batches and their records by kind, source and business', async () => {
    expect((await t.post('sales-orders', orders.slice(0, 2))).status).toBe(202);
    expect((await t.post('sales-orders', [orders[0], { not: 'an order' }, 7])).status).toBe(400);
    const text = await scrape(t);
    expect(sample(text, `warehouse_ingest_batches_total${accepted('sales-orders')}`)).toBe(1);
    expect(sample(text, `warehouse_ingest_records_total${accepted('sales-orders')}`)).toBe(2);
    const rejected = '{outcome="rejected",kind="sales-orders",source="http",business="ACME"}';
    expect(sample(text, `warehouse_ingest_batches_total${rejected}`)).toBe(1);
    expect(sample(text, `warehouse_ingest_records_total${rejected}`)).toBe(3);
    // A 401 never reaches the pipeline, so it is not a batch.
    expect((await t.post('master-data', [{}], { auth: null })).status).toBe(401);
    expect(await scrape(t)).not.toContain('kind="master-data"');
  });

  it('times each confirmed publish and reports the broker connection as 1', async () => {
    const text = await scrape(t);
    expect(
      sample(
        text,
        'warehouse_ingest_publish_duration_seconds_count{publisher="rabbitmq",outcome="confirmed"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'warehouse_ingest_publish_duration_seconds_bucket{le="+Inf",publisher="rabbitmq",outcome="confirmed"}',
      ),
    ).toBe(1);
    expect(sample(text, 'warehouse_ingest_broker_connected')).toBe(1);
  });

  it('needs no credentials and carries a correlation id like every answer', async () => {
    const response = await t.admin.request('/metrics', {
      headers: { 'x-correlation-id': 'scrape-1' },
    });
    expect(response.headers.get('x-correlation-id')).toBe('scrape-1');
  });
});

describe('GET /metrics when publishing fails', () => {
  let t: TestApp;
  beforeAll(async () => {
    // No binding matches `sales-orders.ACME`: the broker returns the messages, the batch fails.
    t = await createTestApp({ bindingKeys: ['nothing.matches'] });
  });
  afterAll(() => t.close());

  it('counts the batch as unavailable, the publish as unconfirmed, and the broker as 0 once closed', async () => {
    expect((await t.post('sales-orders', orders.slice(0, 1))).status).toBe(503);
    let text = await scrape(t);
    expect(
      sample(
        text,
        'warehouse_ingest_batches_total{outcome="unavailable",kind="sales-orders",source="http",business="ACME"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'warehouse_ingest_publish_duration_seconds_count{publisher="rabbitmq",outcome="unconfirmed"}',
      ),
    ).toBe(1);
    await t.publisher.close();
    text = await scrape(t);
    expect(sample(text, 'warehouse_ingest_broker_connected')).toBe(0);
  });
});

describe('metrics per app instance', () => {
  it('keeps series apart and labels an unknown business (sandbox: any credentials) as other', async () => {
    const sandbox = await createTestApp({ environment: 'sandbox' });
    const second = await createTestApp({ environment: 'sandbox' });
    try {
      const auth = `Basic ${Buffer.from('SOMEONE-NEW:any-key').toString('base64')}`;
      const record = structuredClone(orders[0]!) as { identifiers: { businessId: string } };
      record.identifiers.businessId = 'SOMEONE-NEW';
      expect((await sandbox.post('sales-orders', [record], { auth })).status).toBe(202);
      const text = await scrape(sandbox);
      expect(
        sample(text, `warehouse_ingest_batches_total${accepted('sales-orders', 'other')}`),
      ).toBe(1);
      expect(text).not.toContain('SOMEONE-NEW');
      // The sandbox publisher has no broker connection to report.
      expect(sample(text, 'warehouse_ingest_broker_connected')).toBeUndefined();
      expect(await scrape(second)).not.toContain('warehouse_ingest_batches_total{');
    } finally {
      await Promise.all([sandbox.close(), second.close()]);
    }
  });
});

describe('drop hooks (called by the drop runner)', () => {
  it('counts receipt write failures and sets the inputs gauge per pipeline and state', async () => {
    const metrics = createMetrics({ businesses: ['ACME'] });
    metrics.receiptWriteFailed('acme-orders');
    metrics.receiptWriteFailed('acme-orders');
    metrics.setInputs('acme-orders', 'publishing', 3);
    metrics.setInputs('acme-orders', 'publishing', 1);
    metrics.setInputs('acme-orders', 'failed', 2);
    const text = await metrics.registry.metrics();
    expect(
      sample(text, 'warehouse_ingest_receipt_write_failures_total{pipeline="acme-orders"}'),
    ).toBe(2);
    expect(sample(text, 'warehouse_ingest_inputs{pipeline="acme-orders",state="publishing"}')).toBe(
      1,
    );
    expect(sample(text, 'warehouse_ingest_inputs{pipeline="acme-orders",state="failed"}')).toBe(2);
  });
});

describe('log lines dropped (stdout stalled)', () => {
  it('reports the count the logger keeps, as it stands at each scrape', async () => {
    let dropped = 0;
    const metrics = createMetrics({ businesses: [], droppedLogLines: () => dropped });
    expect(
      sample(await metrics.registry.metrics(), 'warehouse_ingest_log_lines_dropped_total'),
    ).toBe(0);
    dropped = 42;
    expect(
      sample(await metrics.registry.metrics(), 'warehouse_ingest_log_lines_dropped_total'),
    ).toBe(42);
  });

  it('is absent when nothing counts them (test apps, a logger of the caller)', async () => {
    const text = await createMetrics({ businesses: [] }).registry.metrics();
    expect(text).not.toContain('warehouse_ingest_log_lines_dropped_total');
  });
});
