import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { demoOrdersCsv } from '../support/drop-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * A full scratch disk is an outage of the worker, not a defect of the file. The worker's
 * `dataDirectory` spool is a real tmpfs of 6 MiB (mounted by the test: it runs as root, as
 * `npm test` does): the file's copy (2.4 MiB) fits, the records its validation pass spools
 * (~25 MiB, 8 MiB of them in memory) do not, so every try ends in ENOSPC. With
 * `retry.maxAttempts: 2`, three such tries used to make the file dead; now none uses an attempt,
 * each is logged at warn and counted, and once the disk is grown the same file is accepted.
 */
const ORDERS = 30_000;
const log = createLogger({ level: 'silent' });
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });

let topology: TestTopology;
let publisher: RabbitMqPublisher;
const temp = tempFolder('scratch-full-');
const scratch = path.join(temp.dir, 'scratch');

const mount = (size: string, remount = false) =>
  execFileSync('mount', [
    '-t',
    'tmpfs',
    '-o',
    `${remount ? 'remount,' : ''}size=${size},mode=0700`,
    'tmpfs',
    scratch,
  ]);

beforeAll(async () => {
  mkdirSync(scratch);
  // Fails loudly (no skip) where the test cannot mount: it needs root, as `npm test` does.
  mount('6m');
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'scratch-full' });
  publisher = createRabbitMqPublisher(
    { url: AMQP_URL, exchange: topology.exchange, queues: [], publishTimeoutMs: 15_000 },
    log,
  );
  await publisher.start();
});
afterAll(async () => {
  await publisher?.close();
  await topology?.cleanup();
  try {
    execFileSync('umount', [scratch]);
  } catch {
    // Still busy (a worker thread of the two-halves pass closing its last file): detach it now,
    // the kernel frees it once the last file is closed. Seen once under Node 24.
    execFileSync('umount', ['--lazy', scratch]);
  }
});

describe.each([
  ['in one pass', Number.POSITIVE_INFINITY],
  // The halves' threads hit the full disk first; the file falls back to one pass, which does too.
  ['in two halves', 1],
])('a full scratch disk, the file validated %s', (how, halvesFromBytes) => {
  it('uses no attempt: the file is tried again after a back-off, and accepted once there is room', async () => {
    mount('6m', true);
    const queuedBefore = await topology.count();
    const drop = path.join(temp.dir, `drop-${halvesFromBytes}`);
    mkdirSync(drop);
    const csv = demoOrdersCsv(`FULL${Date.now().toString(36)}`, ORDERS);
    writeFileSync(path.join(drop, 'orders.csv'), csv);
    const sha = createHash('sha256').update(csv).digest('hex');
    const stateOf = () =>
      JSON.parse(
        readFileSync(path.join(drop, '.warehouse-ingest', 'state', `${sha}.json`), 'utf8'),
      ) as InputState;
    const warnings: string[] = [];
    const metrics = createMetrics({ businesses: ['DEMO'] });
    const runner = createDropRunner({
      pipeline: pipelineSchema.parse({
        name: `scratch-full-${how.replaceAll(' ', '-')}`,
        businessId: 'DEMO',
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: drop },
        readiness: { strategy: 'rename' },
        retry: { maxAttempts: 2, initialDelayMs: 50, maxDelayMs: 100 },
      }),
      store: createLocalDrop({ path: drop }),
      ingest: createIngest({ publisher, routingKeyFor: compileRoutingKey('{kind}.{businessId}') }),
      onboarding,
      log: createLogger({
        level: 'warn',
        destination: { write: (line: string) => void warnings.push(line) },
      }),
      spoolDirectory: scratch,
      halvesFromBytes,
      metrics,
    });
    try {
      // Three tries on a full disk: more than retry.maxAttempts (2).
      let retried = 0;
      await expect
        .poll(
          async () => {
            const summary = await runner.runOnce();
            expect(summary).toMatchObject({ accepted: 0, dead: 0, rejected: 0 });
            retried += summary.retried;
            return retried;
          },
          { timeout: 120_000, interval: 50 },
        )
        .toBeGreaterThanOrEqual(3);
      const state = stateOf();
      expect(state).toMatchObject({ status: 'retry-scheduled', attempts: 0 });
      expect(state.failures?.map((failure) => failure.kind)).toEqual(
        Array(state.failures?.length).fill('unavailable'),
      );
      expect(state.lastError).toContain('ENOSPC');
      expect(existsSync(path.join(drop, 'failed'))).toBe(false);
      expect(readdirSync(drop)).toContain('orders.csv'); // back under its own name
      const warned = warnings.map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(
        warned.filter(
          (line) => line.level === 'warn' && /ran out of local resources/.test(line.msg),
        ).length,
      ).toBeGreaterThanOrEqual(3);
      const text = await metrics.registry.metrics();
      expect(text).toMatch(
        new RegExp(
          `warehouse_ingest_local_resources_exhausted_total\\{pipeline="scratch-full-${how.replaceAll(' ', '-')}",resource="ENOSPC"\\} [3-9]`,
        ),
      );

      // Room again: the very same file goes through.
      mount('256m', true);
      await expect
        .poll(async () => (await runner.runOnce()).accepted, { timeout: 120_000, interval: 100 })
        .toBe(1);
      expect(stateOf()).toMatchObject({ status: 'receipted', attempts: 1 });
      expect((await topology.count()) - queuedBefore).toBe(ORDERS);
    } finally {
      await runner.stop();
    }
  }, 300_000);
});
