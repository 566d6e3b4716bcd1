import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createIngest, PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import type { Publisher } from '../../src/publish/publisher.js';
import { CLAIMS_FOLDER } from '../../src/drops/claims.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner, type RunSummary } from '../../src/drops/runner.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { AMQP_URL } from '../support/broker.js';
import { useRealIngest } from '../support/real-ingest.js';
import { demoOrdersCsv, shipmentIdOf } from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tapStore } from '../support/store-tap.js';
import { tempFolder } from '../support/temp.js';

/**
 * Two workers on one local drop. Worker A stalls in the middle of a file — its broker stops
 * answering and its claim renewals stop — until worker B takes the claim over after the lease and
 * finishes the file. When A wakes up it must stop at its next chunk: it settles nothing, does not
 * put the input's state backwards, and the queue holds the file at most once plus the chunks A
 * had in flight (two: one being confirmed, the next already sent), each under its one id.
 */
const RECORDS = 6 * PUBLISH_CHUNK;
const LEASE_MS = 10_000; // the shortest allowed
const lines: string[] = [];
const log = createLogger({
  level: 'info',
  destination: { write: (line: string) => void lines.push(line) },
});
const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });

const real = useRealIngest({ prefix: 'takeover', log });

/** The real publisher, but from the `stallFrom`-th call on each call waits for `wake()` first. */
function stallingPublisher(real: Publisher, stallFrom: number) {
  let calls = 0;
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  let stalled!: () => void;
  const reached = new Promise<void>((resolve) => {
    stalled = resolve;
  });
  const publisher: Publisher = {
    ...real,
    async publish(messages) {
      if (++calls >= stallFrom) {
        stalled();
        await woken;
      }
      return real.publish(messages);
    },
  };
  return { publisher, reached, wake };
}

describe('a worker that lost its claim while stalled', () => {
  it('stops at its next chunk, settles nothing, never puts the state back; the file is published at most once plus the chunks in flight', async () => {
    const temp = tempFolder('takeover-');
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(drop);
    const tag = `TKO${Date.now().toString(36)}`;
    const csv = demoOrdersCsv(tag, RECORDS);
    writeFileSync(path.join(drop, 'big.csv'), csv);
    const sha = createHash('sha256').update(csv).digest('hex');
    const statePath = path.join(drop, '.warehouse-ingest', 'state', `${sha}.json`);
    const pipeline = pipelineSchema.parse({
      name: 'takeover-drop',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: drop },
      readiness: { strategy: 'rename' },
      claimLeaseMs: LEASE_MS,
    });
    const runner = (
      workerId: string,
      store = createLocalDrop({ path: drop }),
      pub: Publisher = real.publisher,
    ) =>
      createDropRunner({
        pipeline,
        store,
        ingest: createIngest({
          publisher: pub,
          routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
        }),
        onboarding,
        log: log.child({ worker: workerId }),
        spoolDirectory: path.join(temp.dir, `spool-${workerId}`),
        workerId,
      });

    // Worker A: stalls at its second chunk, and its claim renewals fail from the start.
    const tapped = tapStore(createLocalDrop({ path: drop }));
    tapped.before(async (operation, name) => {
      const renewal =
        name.startsWith(`${CLAIMS_FOLDER}/`) && name.includes(` -> ${CLAIMS_FOLDER}/`);
      if (operation === 'rename' && renewal) throw new Error('frozen: the claim is not renewed');
    });
    const stall = stallingPublisher(real.publisher, 2);
    const a = runner('a', tapped.store, stall.publisher);
    const aRun = a.runOnce();
    await stall.reached;

    // Worker B takes the claim over once it is older than the lease, and finishes the file.
    const b = runner('b');
    let bDone: RunSummary | undefined;
    await expect
      .poll(
        async () => {
          bDone = await b.runOnce();
          return bDone.accepted;
        },
        { timeout: 4 * LEASE_MS, interval: 500 },
      )
      .toBe(1);
    const settled = JSON.parse(readFileSync(statePath, 'utf8')) as InputState;
    expect(settled).toMatchObject({ status: 'receipted', worker: 'b' });

    // A wakes up: it stops at its next chunk and leaves everything as B left it.
    stall.wake();
    expect(await aRun).toMatchObject({ skipped: 1, accepted: 0 });
    await a.stop();
    await b.stop();
    expect(JSON.parse(readFileSync(statePath, 'utf8'))).toEqual(settled);
    // Said once by A. (B may say it too: had A recorded a chunk just as B took over, B's first
    // write was refused, and B took its own claim over after the lease.)
    const stopped = lines.filter(
      (l) => l.includes('file taken over by another worker') && l.includes('"worker":"a"'),
    );
    expect(stopped).toHaveLength(1);

    const audit = auditQueue(await drainQueue(AMQP_URL, real.topology.queue), shipmentIdOf);
    expect(audit.distinctIds).toBe(RECORDS);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(audit.idsWithDifferentBodies).toEqual([]);
    expect(audit.duplicates).toBeLessThanOrEqual(2 * PUBLISH_CHUNK);
  }, 180_000);
});
