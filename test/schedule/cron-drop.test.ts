import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import type { OnboardingProfiles } from '../../src/records/legacy/index.js';
import { createDropRunner, type DropRunner } from '../../src/drops/runner.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { demoOrdersCsv } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * A drop runner on a cron schedule, as `serve` and `run` start it: a real local drop, real ingest
 * and a real RabbitMQ publisher. `* * * * * *` ticks every second.
 */
const DEV_ONBOARDING = loadConfig({ env: { INGEST_ENV: 'development' } }).onboarding;
const spool = tempFolder('cron-spool-');
let topology: TestTopology;
let publisher: RabbitMqPublisher;
const runners: DropRunner[] = [];

beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'cron' });
  publisher = createRabbitMqPublisher(
    {
      url: AMQP_URL,
      exchange: topology.exchange,
      queues: [],
      publishTimeoutMs: 15_000,
      reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
    },
    createLogger({ level: 'silent' }),
  );
  await publisher.start();
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  await publisher.close();
  await topology.cleanup();
});

let n = 0;
function setUp(
  extra: Record<string, unknown>,
  options: { wrap?: (store: DropStore) => DropStore; onboarding?: OnboardingProfiles } = {},
) {
  const drop = tempFolder('cron-drop-').dir;
  const name = `cron-${process.pid}-${++n}`;
  const lines: Array<Record<string, unknown> & { level: string; msg: string }> = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const pipeline = pipelineSchema.parse({
    name,
    businessId: 'DEMO',
    kind: 'sales-orders',
    format: 'v1-csv',
    source: { type: 'local', path: drop },
    readiness: { strategy: 'rename' },
    ...extra,
  });
  const local = createLocalDrop({ path: drop });
  const store = options.wrap ? options.wrap(local) : local;
  const ingest = createIngest({
    publisher,
    routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
  });
  const runner = createDropRunner({
    pipeline,
    store,
    ingest,
    onboarding: options.onboarding ?? DEV_ONBOARDING,
    log,
    spoolDirectory: spool.dir,
    workerId: `w${n}`,
  });
  runners.push(runner);
  const put = (file: string, content: string) => writeFileSync(path.join(drop, file), content);
  const receipt = (file: string) =>
    JSON.parse(readFileSync(path.join(drop, file), 'utf8')) as { outcome: string; attempt: number };
  return {
    drop,
    name,
    runner,
    lines,
    put,
    receipt,
    has: (file: string) => existsSync(path.join(drop, file)),
  };
}

/** The store with `list()` of the drop itself replaced (claims and state folders untouched). */
function withList(
  store: DropStore,
  list: (real: () => ReturnType<DropStore['list']>) => ReturnType<DropStore['list']>,
): DropStore {
  return Object.assign(Object.create(store) as DropStore, {
    list: (folder?: string) =>
      folder === undefined ? list(() => store.list()) : store.list(folder),
  });
}

const EVERY_SECOND = { cron: '* * * * * *' };

describe('drops on a cron schedule', () => {
  it('processes a dropped file at the next tick', async () => {
    const t = setUp({ schedule: EVERY_SECOND });
    t.runner.start();
    t.put('orders.csv', demoOrdersCsv(`CRON-${Date.now()}`, 2));
    await expect
      .poll(() => t.has('processed/orders.csv.receipt.json'), { timeout: 8000 })
      .toBe(true);
    expect(t.receipt('processed/orders.csv.receipt.json').outcome).toBe('accepted');
    expect(await topology.count()).toBe(2);
    await topology.messages();
    await t.runner.stop();
  });

  it('never looks twice at once: a slow look spanning several ticks runs once', async () => {
    let looks = 0;
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const t = setUp(
      { schedule: EVERY_SECOND },
      {
        wrap: (store) =>
          withList(store, async (real) => {
            looks += 1;
            if (looks === 1) await slow;
            return real();
          }),
      },
    );
    t.runner.start();
    const skipped = () =>
      t.lines.filter(
        (l) => l.level === 'debug' && l.job === `poll:${t.name}` && l.msg.includes('still going'),
      ).length;
    await expect.poll(skipped, { timeout: 8000 }).toBeGreaterThanOrEqual(2);
    expect(looks).toBe(1);
    t.put('late.csv', demoOrdersCsv(`SLOW-${Date.now()}`, 1));
    release();
    await expect.poll(() => t.has('processed/late.csv.receipt.json'), { timeout: 8000 }).toBe(true);
    await topology.messages();
    await t.runner.stop();
  });

  it('logs a look that fails with the job name, and looks again at the next tick', async () => {
    let looks = 0;
    const t = setUp(
      { schedule: EVERY_SECOND },
      {
        wrap: (store) =>
          withList(store, async (real) => {
            looks += 1;
            if (looks === 1)
              throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
            return real();
          }),
      },
    );
    t.put('orders.csv', demoOrdersCsv(`FAIL-${Date.now()}`, 1));
    t.runner.start();
    await expect
      .poll(() => t.has('processed/orders.csv.receipt.json'), { timeout: 8000 })
      .toBe(true);
    const errors = t.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      job: `poll:${t.name}`,
      msg: `job poll:${t.name} failed; it runs again at its next tick`,
    });
    expect(errors[0]!.reason).toMatch(/^could not read the drop at .*: connection reset$/);
    await topology.messages();
    await t.runner.stop();
  });

  it("runs the pipeline's reprocess job at its tick: a file rejected for missing onboarding data is accepted once it is added", async () => {
    const onboarding: Record<string, unknown> = {};
    const t = setUp(
      {
        schedule: { pollIntervalMs: 60_000 },
        reprocess: [{ name: 'after-fix', cron: '* * * * * *' }],
      },
      { onboarding: onboarding as OnboardingProfiles },
    );
    t.put('orders.csv', demoOrdersCsv(`FIX-${Date.now()}`, 2));
    expect(await t.runner.runOnce()).toMatchObject({ rejected: 1 });
    expect(t.receipt('failed/orders.csv.receipt.json')).toMatchObject({
      outcome: 'rejected',
      attempt: 1,
    });
    onboarding.DEMO = DEV_ONBOARDING.DEMO; // the business's master data is fixed
    t.runner.start();
    // The job's summary is logged once the input is settled and its state written.
    const summary = () => t.lines.find((l) => l.msg === 'reprocessed 1 input(s)');
    await expect.poll(summary, { timeout: 8000 }).toBeDefined();
    expect(summary()).toMatchObject({ job: `reprocess:${t.name}:after-fix`, accepted: 1 });
    expect(t.receipt('processed/orders.csv.receipt.json')).toMatchObject({
      outcome: 'accepted',
      attempt: 2,
    });
    expect(t.receipt('failed/orders.csv.receipt.json')).toMatchObject({
      outcome: 'rejected',
      attempt: 1,
    });
    expect(await topology.count()).toBe(2);
    await topology.messages();
    await t.runner.stop();
  });
});
