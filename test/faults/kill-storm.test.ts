import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { InputState } from '../../src/drops/state/input-state.js';
import type { Receipt } from '../../src/drops/receipts.js';
import { PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { AMQP_URL } from '../support/broker.js';
import { startCliWorker, stopCli, useWorkerProcesses } from '../support/cli-worker.js';
import { demoOrdersCsv, shipmentIdOf } from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';

/**
 * A kill -9 storm over a file being published: `warehouse-ingest run` workers SIGKILLed, each
 * once the drop's state shows the broker confirmed at least one more chunk of the file than the
 * try before. With `retry.maxAttempts: 2`, three such kills used to make the healthy file dead
 * (each unfinished try used an attempt). Now a try killed after progress gives its attempt back,
 * and the next worker publishes the rest: one `accepted` receipt, every record under one id.
 */
const ORDERS = 30 * PUBLISH_CHUNK;
const KILLS = 3;
const LEASE_MS = 10_000; // the shortest allowed: a killed worker's claim is taken over after it

describe('a kill -9 storm over a file being published', () => {
  const processes = useWorkerProcesses('kill-storm');
  const { workers } = processes;

  it('does not kill the file: each try killed after progress gives its attempt back', async () => {
    const temp = tempFolder('kill-storm-');
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(drop);
    const tag = `KS${Date.now().toString(36)}`;
    const csv = demoOrdersCsv(tag, ORDERS);
    const sha = createHash('sha256').update(csv).digest('hex');
    const statePath = path.join(drop, '.warehouse-ingest', 'state', `${sha}.json`);
    const stateNow = () =>
      existsSync(statePath)
        ? (JSON.parse(readFileSync(statePath, 'utf8')) as InputState)
        : undefined;
    const pipeline = temp.write(
      'storm.yaml',
      [
        'name: kill-storm',
        'businessId: DEMO',
        'kind: sales-orders',
        'format: v1-csv',
        `source: { type: local, path: ${drop} }`,
        'readiness: { strategy: rename }',
        'schedule: { pollIntervalMs: 200 }',
        `claimLeaseMs: ${LEASE_MS}`,
        'retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 200 }',
        '',
      ].join('\n'),
    );
    const config = temp.write(
      'config.yaml',
      `dataDirectory: ${temp.dir}/data\nbroker:\n  exchange: ${processes.topology.exchange}\n  queues: []\n`,
    );
    const env = { INGEST_CONFIG: config, AMQP_URL };
    writeFileSync(path.join(drop, 'big.csv'), csv);

    let recorded = 0;
    for (let k = 1; k <= KILLS; k++) {
      const worker = startCliWorker(pipeline, env);
      workers.push(worker);
      // Killed once this try has got at least one more chunk confirmed and recorded.
      await expect
        .poll(() => stateNow()?.resume?.confirmed ?? 0, {
          timeout: 60_000,
          interval: 5,
          message: `try ${k} made no progress: ${JSON.stringify(stateNow())} ${worker.stderr()}`,
        })
        .toBeGreaterThan(recorded);
      await stopCli(worker, 'SIGKILL');
      recorded = stateNow()?.resume?.confirmed ?? 0;
      expect(recorded, `kill ${k} came after the file was done`).toBeLessThan(ORDERS);
    }

    const last = startCliWorker(pipeline, env);
    workers.push(last);
    const receiptPath = path.join(drop, 'processed', 'big.csv.receipt.json');
    await expect
      .poll(() => existsSync(receiptPath) || existsSync(path.join(drop, 'failed')), {
        timeout: 90_000,
        interval: 100,
      })
      .toBe(true);
    expect((await stopCli(last, 'SIGTERM')).exit).toBe('code 0');

    expect(existsSync(path.join(drop, 'failed')), 'the file went to failed/').toBe(false);
    const receipt = JSON.parse(readFileSync(receiptPath, 'utf8')) as Receipt;
    expect(receipt).toMatchObject({ outcome: 'accepted', attempt: 1 });
    const state = stateNow()!;
    expect(state).toMatchObject({ status: 'receipted', attempts: 1 });
    expect(state.failures?.filter((failure) => failure.kind === 'unfinished')).toHaveLength(KILLS);
    const audit = auditQueue(await drainQueue(AMQP_URL, processes.topology.queue), shipmentIdOf);
    expect(audit.distinctIds).toBe(ORDERS);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(audit.idsWithDifferentBodies).toEqual([]);
    const { messageIds } = receipt.response as { messageIds: string[] };
    expect(new Set(messageIds)).toEqual(new Set(audit.bodyOf.keys()));
  }, 240_000);
});
