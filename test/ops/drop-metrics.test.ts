import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { createDropRunner, type DropRunner } from '../../src/drops/runner.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { localFixture } from '../support/local-fixture.js';
import { tapStore } from '../support/store-tap.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv, PROFILE } from '../drops/stores/drop-contract.js';
import type { StoreFixture } from '../stores/store-contract.js';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * The drop runner feeds the metrics while it polls: inputs per durable state after every look,
 * and every receipt it could not write. A real local drop and a real RabbitMQ behind it.
 */
describe('drop metrics from a polling runner', () => {
  let f: StoreFixture;
  let topology: TestTopology;
  let publisher: RabbitMqPublisher;
  let runner: DropRunner | undefined;
  const spool = tempFolder('metrics-spool-');
  const log = createLogger({ level: 'silent' });

  beforeAll(async () => {
    f = await localFixture('drop-metrics-')();
    topology = await declareTestTopology({ bindingKeys: ['#'] });
    publisher = createRabbitMqPublisher(
      {
        url: AMQP_URL,
        exchange: topology.exchange,
        queues: [],
        publishTimeoutMs: 10_000,
        reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
      },
      log,
    );
    await publisher.start();
  });
  afterAll(async () => {
    await runner?.stop();
    await publisher.close();
    await topology.cleanup();
  });

  it('sets warehouse_ingest_inputs per state after each look, and counts a receipt it could not write', async () => {
    const tap = tapStore(f.store);
    let failReceipts = 1;
    tap.before(async (operation, name) => {
      if (operation === 'write' && name.endsWith('good.csv.receipt.json') && failReceipts-- > 0)
        throw new Error('disk full');
    });
    const metrics = createMetrics({ businesses: ['ACME'] });
    const pipeline = pipelineSchema.parse({
      name: 'metrics-drop',
      businessId: 'ACME',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: '/unused' },
      readiness: { strategy: 'rename' },
      schedule: { pollIntervalMs: 100 },
      retry: { initialDelayMs: 0, maxDelayMs: 0 },
    });
    const ingest = createIngest({
      publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
    });
    runner = createDropRunner({
      pipeline,
      store: tap.store,
      ingest,
      onboarding: { ACME: { 'sales-orders': PROFILE } },
      log,
      spoolDirectory: spool.dir,
      metrics,
    });
    await f.put('good.csv', ordersCsv('M'));
    await f.put('bad.csv', 'not,a,legacy,file\n1,2,3,4\n');
    runner.start();
    const series = (state: string) =>
      `warehouse_ingest_inputs{pipeline="metrics-drop",state="${state}"}`;
    await vi.waitFor(
      async () => {
        const text = await metrics.registry.metrics();
        expect(
          sample(text, series('receipted')),
          text
            .split('\n')
            .filter((l) => l.includes('inputs'))
            .join('\n'),
        ).toBe(1);
        expect(sample(text, series('failed'))).toBe(1);
      },
      { timeout: 15_000, interval: 100 },
    );
    const text = await metrics.registry.metrics();
    expect(sample(text, series('dead'))).toBe(0);
    expect(sample(text, series('published'))).toBe(0);
    // The first receipt write failed: counted, and the file was settled on a later look.
    expect(
      sample(text, 'warehouse_ingest_receipt_write_failures_total{pipeline="metrics-drop"}'),
    ).toBe(1);
    expect(await f.has('processed/good.csv.receipt.json')).toBe(true);
    await vi.waitFor(async () => expect(await f.has('failed/bad.csv.receipt.json')).toBe(true), {
      timeout: 5_000,
      interval: 100,
    });
    expect(await topology.count()).toBe(2); // published once: the retry found the state "published"
  });

  it('reports a drop that cannot be listed in warehouse_ingest_drop_reachable, and logs the outage once when it begins and once when it ends, not at every poll', async () => {
    await runner?.stop();
    const tap = tapStore(f.store);
    let down = true;
    let failedLooks = 0;
    tap.before(async (operation) => {
      if (operation === 'list' && down) {
        failedLooks += 1;
        throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
      }
    });
    const lines: Array<{ level: string; msg: string }> = [];
    const watched = createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const metrics = createMetrics({ businesses: ['ACME'], pipelines: ['outage-drop'] });
    const reachable = async () =>
      sample(
        await metrics.registry.metrics(),
        'warehouse_ingest_drop_reachable{pipeline="outage-drop"}',
      );
    // Absent before the first look: a standby worker or a cron pipeline before its tick says nothing.
    expect(await reachable()).toBeUndefined();
    runner = createDropRunner({
      pipeline: pipelineSchema.parse({
        name: 'outage-drop',
        businessId: 'ACME',
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: '/unused' },
        readiness: { strategy: 'rename' },
        schedule: { pollIntervalMs: 100 },
      }),
      store: tap.store,
      ingest: createIngest({ publisher, routingKeyFor: compileRoutingKey('{kind}.{businessId}') }),
      onboarding: { ACME: { 'sales-orders': PROFILE } },
      log: watched,
      spoolDirectory: spool.dir,
      metrics,
    });
    runner.start();
    await vi.waitFor(() => expect(failedLooks).toBeGreaterThanOrEqual(4), {
      timeout: 15_000,
      interval: 50,
    });
    expect(await reachable()).toBe(0);
    const errors = () => lines.filter((l) => l.level === 'error' || l.level === 'warn');
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.msg).toBe('job poll:outage-drop failed; it runs again in 100 ms');
    down = false;
    await vi.waitFor(async () => expect(await reachable()).toBe(1), {
      timeout: 15_000,
      interval: 50,
    });
    await runner.stop();
    runner = undefined;
    expect(
      lines.filter((l) => l.msg === 'the drop can be read again: looks go through'),
    ).toHaveLength(1);
    expect(errors()).toHaveLength(1);
  });
});
