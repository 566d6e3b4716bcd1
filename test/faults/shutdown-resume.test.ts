import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createIngest } from '../../src/ingest/flow.js';
import type { Receipt } from '../../src/drops/receipts.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { createDropRunner } from '../../src/drops/runner.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { demoOrdersCsv, shipmentIdOf } from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';

/**
 * The resume point of an interrupted file, in process: a runner stopped mid-publish, then the
 * next try when the ids kept in the drop hold more than the state vouches for (a crash between
 * the two writes) or none at all (lost): both are resumed from the state's point (the ids of the
 * records before it are derived again from the bytes). Neither loses a record or names one twice.
 */
const RECORDS = 20_000;
const log = createLogger({ level: process.env.DEBUG_LOG ? 'info' : 'silent' });
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });

let topology: TestTopology;
let publisher: RabbitMqPublisher;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'resume' });
  publisher = createRabbitMqPublisher(
    { url: AMQP_URL, exchange: topology.exchange, queues: [] },
    log,
  );
  await publisher.start();
});
afterAll(async () => {
  await publisher.close();
  await topology.cleanup();
});

function dropWith(name: string, csv: string) {
  const temp = tempFolder('resume-');
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  writeFileSync(path.join(drop, name), csv);
  const pipeline = pipelineSchema.parse({
    name: 'resume-drop',
    businessId: 'DEMO',
    kind: 'sales-orders',
    format: 'v1-csv',
    source: { type: 'local', path: drop },
    readiness: { strategy: 'rename' },
  });
  const sha = createHash('sha256').update(csv).digest('hex');
  const runner = () =>
    createDropRunner({
      pipeline,
      store: createLocalDrop({ path: drop }),
      ingest: createIngest({ publisher, routingKeyFor: compileRoutingKey('{kind}.{businessId}') }),
      onboarding,
      log,
      spoolDirectory: path.join(temp.dir, 'spool'),
    });
  return {
    drop,
    runner,
    statePath: path.join(drop, '.warehouse-ingest', 'state', `${sha}.json`),
    idsPath: path.join(drop, '.warehouse-ingest', 'state', `${sha}.ids`),
  };
}

/** Runs the drop once and stops it (stop, then interrupt) once the queue holds at least `atLeast` messages. */
async function interruptedRun(make: () => ReturnType<typeof createDropRunner>, atLeast: number) {
  const runner = make();
  const summary = runner.runOnce();
  await expect
    .poll(() => topology.count(), { timeout: 60_000, interval: 10 })
    .toBeGreaterThanOrEqual(atLeast);
  const stopped = runner.stop();
  runner.interrupt();
  await stopped;
  return summary;
}

describe('resuming an interrupted file', () => {
  it('takes only the ids the state vouches for when the drop holds more (a crash between the ids and the state)', async () => {
    const tag = `RES${Date.now().toString(36)}`;
    const d = dropWith('orders.csv', demoOrdersCsv(tag, RECORDS));
    expect(await interruptedRun(d.runner, 2000)).toMatchObject({ interrupted: 1, accepted: 0 });
    const state = JSON.parse(readFileSync(d.statePath, 'utf8')) as InputState;
    const confirmed = state.resume!.confirmed;
    expect(confirmed).toBeGreaterThanOrEqual(2000);
    expect(await topology.count()).toBe(confirmed);
    // As if a later try had written its ids and died before its state: lines the state does not vouch for.
    appendFileSync(d.idsPath, 'not-a-confirmed-id-1\nnot-a-confirmed-id-2\n');

    expect(await d.runner().runOnce()).toMatchObject({ accepted: 1, interrupted: 0 });
    const receipt = JSON.parse(
      readFileSync(path.join(d.drop, 'processed', 'orders.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    const { messageIds, recordCount } = receipt.response as {
      messageIds: string[];
      recordCount: number;
    };
    expect(recordCount).toBe(RECORDS);
    const messages = await drainQueue(AMQP_URL, topology.queue);
    expect(messages.map((m) => m.messageId)).toEqual(messageIds);
    expect(messages.map((m) => shipmentIdOf(m.body))).toEqual(
      Array.from({ length: RECORDS }, (_, i) => `${tag}-${i}`),
    );
  });

  it("resumes from the state's point also when the kept ids are gone: their ids are derived again from the bytes", async () => {
    const d = dropWith('orders.csv', demoOrdersCsv(`LOST${Date.now().toString(36)}`, RECORDS));
    expect(await interruptedRun(d.runner, 2000)).toMatchObject({ interrupted: 1 });
    const confirmed = (JSON.parse(readFileSync(d.statePath, 'utf8')) as InputState).resume!
      .confirmed;
    expect(confirmed).toBeGreaterThan(0);
    rmSync(d.idsPath);

    expect(await d.runner().runOnce()).toMatchObject({ accepted: 1 });
    const receipt = JSON.parse(
      readFileSync(path.join(d.drop, 'processed', 'orders.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    const { messageIds } = receipt.response as { messageIds: string[] };
    expect(messageIds).toHaveLength(RECORDS);
    const messages = await drainQueue(AMQP_URL, topology.queue);
    // Nothing published twice, and the receipt lists exactly the ids the queue holds, in order.
    expect(messages.map((m) => m.messageId)).toEqual(messageIds);
    const audit = auditQueue(messages, shipmentIdOf);
    expect(audit.duplicates).toBe(0);
    expect(audit.distinctIds).toBe(RECORDS);
  });
});
