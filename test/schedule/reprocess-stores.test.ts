import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import type { OnboardingProfiles } from '../../src/records/legacy/index.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createRabbitMqLease } from '../../src/drops/lease.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { demoOrdersCsv } from '../support/drop-harness.js';
import { s3Fixture } from '../support/s3-fixture.js';
import { tempFolder } from '../support/temp.js';
import { readAll as readStream, type StoreFixture } from '../stores/store-contract.js';

/**
 * Reprocessing with several workers on one drop. A local folder (and SFTP) has an atomic rename:
 * each input is claimed before it is tried, so two workers reprocessing at once try it once.
 * S3 has none: only the worker holding the drop's lease reprocesses.
 */
const DEV_ONBOARDING = loadConfig({ env: { INGEST_ENV: 'development' } }).onboarding;
let topology: TestTopology;
let publisher: RabbitMqPublisher;
let s3: StoreFixture;
const spool = tempFolder('reprocess-s3-spool-');
const log = createLogger({ level: 'silent' });
const readAll = async (store: StoreFixture['store'], name: string) =>
  (await readStream(await store.read(name))).toString('utf8');

beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'reprocess-s3' });
  publisher = createRabbitMqPublisher(
    {
      url: AMQP_URL,
      exchange: topology.exchange,
      queues: [],
      publishTimeoutMs: 15_000,
      reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
    },
    log,
  );
  await publisher.start();
  s3 = await s3Fixture();
});
afterAll(async () => {
  await publisher.close();
  await topology.cleanup();
  await s3.cleanup();
});

describe('reprocessing a local drop with two workers at once', () => {
  it('claims each input first: every input is tried once, by one worker, with one new receipt', async () => {
    const drop = tempFolder('reprocess-local-').dir;
    const name = `reprocess-local-${process.pid}`;
    const pipeline = pipelineSchema.parse({
      name,
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: drop },
      readiness: { strategy: 'rename' },
    });
    const onboarding: Record<string, unknown> = {};
    const ingest = createIngest({
      publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
    });
    const worker = (id: string) =>
      createDropRunner({
        pipeline,
        store: createLocalDrop({ path: drop }),
        ingest,
        onboarding: onboarding as OnboardingProfiles,
        log,
        spoolDirectory: spool.dir,
        workerId: id,
      });
    const [a, b] = [worker('a'), worker('b')];
    const files = 6;
    for (let i = 0; i < files; i++)
      writeFileSync(path.join(drop, `orders-${i}.csv`), demoOrdersCsv(`TWO-${i}-${Date.now()}`, 1));
    expect(await a.runOnce()).toMatchObject({ rejected: files });
    await topology.messages();
    onboarding.DEMO = DEV_ONBOARDING.DEMO;
    try {
      const [ra, rb] = await Promise.all([a.reprocess(), b.reprocess()]);
      const tried = [...ra.inputs, ...rb.inputs].filter((input) => input.outcome !== 'skipped');
      expect(tried.map((input) => input.outcome)).toEqual(Array(files).fill('accepted'));
      expect(new Set(tried.map((input) => input.file)).size).toBe(files);
      expect(
        readdirSync(path.join(drop, 'processed')).filter((f) => f.endsWith('.receipt.json')),
      ).toHaveLength(files);
      expect(readdirSync(path.join(drop, 'failed'))).toHaveLength(files); // the first receipts only
      expect(await topology.count()).toBe(files);
      await topology.messages();
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe('reprocessing an S3 drop', () => {
  it('is done by the lease holder only, from failed/, with a new receipt beside the first', async () => {
    const name = `reprocess-s3-${process.pid}`;
    const pipeline = pipelineSchema.parse({
      name,
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 's3', bucket: 'unused', region: 'x' },
      readiness: { strategy: 'rename' },
    });
    const onboarding: Record<string, unknown> = {};
    const ingest = createIngest({
      publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
    });
    const worker = (id: string) =>
      createDropRunner({
        pipeline,
        store: s3.store,
        ingest,
        onboarding: onboarding as OnboardingProfiles,
        log,
        spoolDirectory: spool.dir,
        workerId: id,
        lease: createRabbitMqLease({ url: AMQP_URL, pipeline: name }, log),
      });
    const a = worker('a');
    await s3.put('orders.csv', demoOrdersCsv(`S3FIX-${Date.now()}`, 2));
    expect(await a.runOnce({ waitForLeaseMs: 10_000 })).toMatchObject({ rejected: 1 });
    const first = await readAll(s3.store, 'failed/orders.csv.receipt.json');

    const b = worker('b');
    try {
      onboarding.DEMO = DEV_ONBOARDING.DEMO;
      expect(await b.reprocess()).toEqual({ pipeline: name, standby: true, inputs: [] });
      expect(await s3.has('failed/orders.csv')).toBe(true);

      const report = await a.reprocess();
      expect(report.inputs).toMatchObject([
        {
          file: 'orders.csv',
          location: 'failed/orders.csv',
          status: 'failed',
          attempts: 1,
          outcome: 'accepted',
          attempt: 2,
        },
      ]);
      expect(
        JSON.parse(await readAll(s3.store, 'processed/orders.csv.receipt.json')),
      ).toMatchObject({ outcome: 'accepted', attempt: 2 });
      expect(await readAll(s3.store, 'failed/orders.csv.receipt.json')).toBe(first);
      expect(await s3.has('failed/orders.csv')).toBe(false);
      expect(await topology.count()).toBe(2);
      await topology.messages();
      expect((await a.reprocess()).inputs).toEqual([]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
