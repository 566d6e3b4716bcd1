import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createIngest, PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import type { Receipt } from '../../src/drops/receipts.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import type { RabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { demoOrdersCsv, shipmentIdOf } from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { startProxiedPublisher } from '../support/proxied-publisher.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';

/**
 * A try cut short by a transient failure — here the broker connection cut mid-file through a
 * proxy — is resumed by the next try from the last confirmed chunk, not published whole again:
 * the queue holds every record, at most the chunks in flight at the cut twice (two: one being
 * confirmed, the next already sent), each copy under its record's one id.
 */
const RECORDS = 8 * PUBLISH_CHUNK;
const log = createLogger({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' });
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });

let topology: TestTopology;
let proxy: TcpProxy;
let publisher: RabbitMqPublisher;
let proxied: Awaited<ReturnType<typeof startProxiedPublisher>>;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'resume-failure' });
  proxied = await startProxiedPublisher(topology.exchange, log);
  ({ proxy, publisher } = proxied);
});
afterAll(async () => {
  await proxied.close();
  await topology.cleanup();
});

describe('resuming after a transient failure', () => {
  it('a broker cut mid-file: the next try publishes only what was not confirmed, under the same ids', async () => {
    const temp = tempFolder('resume-failure-');
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(drop);
    const tag = `CUT${Date.now().toString(36)}`;
    const csv = demoOrdersCsv(tag, RECORDS);
    writeFileSync(path.join(drop, 'big.csv'), csv);
    const sha = createHash('sha256').update(csv).digest('hex');
    const pipeline = pipelineSchema.parse({
      name: 'resume-failure-drop',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: drop },
      readiness: { strategy: 'rename' },
      retry: { initialDelayMs: 100, maxDelayMs: 200 },
    });
    const runner = () =>
      createDropRunner({
        pipeline,
        store: createLocalDrop({ path: drop }),
        ingest: createIngest({
          publisher,
          routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
        }),
        onboarding,
        log,
        spoolDirectory: path.join(temp.dir, 'spool'),
      });

    const first = runner();
    const cutShort = first.runOnce();
    // Mid-file: three chunks are in the queue when the connection is cut.
    await expect
      .poll(() => topology.count(), { timeout: 60_000, interval: 10 })
      .toBeGreaterThanOrEqual(3 * PUBLISH_CHUNK);
    proxy.cut({ refuse: true });
    expect(await cutShort).toMatchObject({ retried: 1, accepted: 0 });
    await first.stop();
    const inQueue = await topology.count();
    expect(inQueue).toBeLessThan(RECORDS);
    const state = JSON.parse(
      readFileSync(path.join(drop, '.warehouse-ingest', 'state', `${sha}.json`), 'utf8'),
    ) as InputState;
    expect(state).toMatchObject({ status: 'retry-scheduled', attempts: 0 });
    expect(state.failures?.at(-1)?.kind).toBe('unavailable');
    expect(state.resume?.confirmed).toBeGreaterThanOrEqual(inQueue - 2 * PUBLISH_CHUNK);

    proxy.restore();
    const second = runner();
    await expect
      .poll(async () => (await second.runOnce()).accepted, { timeout: 60_000, interval: 200 })
      .toBe(1);
    await second.stop();

    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'processed', 'big.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    const { messageIds } = receipt.response as { messageIds: string[] };
    const audit = auditQueue(await drainQueue(AMQP_URL, topology.queue), shipmentIdOf);
    expect(audit.distinctIds).toBe(RECORDS);
    expect([...audit.bodyOf.keys()].sort()).toEqual([...messageIds].sort());
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(audit.idsWithDifferentBodies).toEqual([]);
    expect(audit.duplicates).toBeLessThanOrEqual(2 * PUBLISH_CHUNK);
  }, 180_000);
});
