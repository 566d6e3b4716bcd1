import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import { PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { AMQP_URL } from '../support/broker.js';
import { demoOrdersCsv, shipmentIdOf, startDropHarness } from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';

/**
 * A file given up on after part of it was published: the broker confirmed its first records,
 * and they stay in the queue whatever happens to the file, so its dead receipt must say which.
 * Here the try's own error (a state write refused with EIO once 4000 records were confirmed, on
 * the last allowed attempt) ends it; the receipt lists the ids of the records the state had
 * recorded as confirmed, each of them in the queue.
 */
const ORDERS = 8 * PUBLISH_CHUNK;
const temp = tempFolder('dead-progress-');
let close: (() => Promise<void>) | undefined;
afterAll(async () => {
  await close?.();
});

describe('a file that ends dead after part of it was published', () => {
  it('has a receipt listing the message ids already confirmed', async () => {
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(drop);
    const tag = `DP${Date.now().toString(36)}`;
    const csv = demoOrdersCsv(tag, ORDERS);
    const sha = createHash('sha256').update(csv).digest('hex');
    const local = createLocalDrop({ path: drop });
    const stateName = `.warehouse-ingest/state/${sha}.json`;
    // The real local store, but the state write that records 4000 confirmed records fails.
    const store: DropStore = {
      ...local,
      async write(name, content) {
        if (
          name === stateName &&
          typeof content === 'string' &&
          (JSON.parse(content) as InputState).resume?.confirmed === 4 * PUBLISH_CHUNK
        )
          throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
        return local.write(name, content);
      },
    };
    const harness = await startDropHarness(store, 'dead-progress', {
      source: { type: 'local', path: drop },
      retry: { maxAttempts: 1, initialDelayMs: 50, maxDelayMs: 100 },
    });
    close = harness.close;
    writeFileSync(path.join(drop, 'orders.csv'), csv);

    expect(await harness.runner.runOnce()).toMatchObject({ dead: 1, accepted: 0 });
    const state = JSON.parse(readFileSync(path.join(drop, stateName), 'utf8')) as InputState;
    expect(state).toMatchObject({ status: 'dead', attempts: 1 });
    const confirmed = state.resume?.confirmed ?? 0;
    expect(confirmed).toBe(3 * PUBLISH_CHUNK);

    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'failed', 'orders.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    expect(receipt.outcome).toBe('dead');
    const response = receipt.response as unknown as {
      type: string;
      detail: string;
      publishedRecords: number;
      messageIds: string[];
    };
    expect(response).toMatchObject({
      type: '/problems/gave-up',
      publishedRecords: confirmed,
      detail: expect.stringContaining(`The first ${confirmed} record(s) were published`),
    });
    expect(response.messageIds).toHaveLength(confirmed);
    expect(new Set(response.messageIds).size).toBe(confirmed);

    // Each listed id is in the queue, under the record it names: the file's first records, in order.
    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    response.messageIds.forEach((id, index) => {
      const body = audit.bodyOf.get(id);
      expect(body, `id ${index} in the queue`).toBeDefined();
      expect(shipmentIdOf(body!)).toBe(`${tag}-${index}`);
    });
    // Beyond them, at most the two chunks that were in flight when the try failed.
    expect(audit.distinctIds).toBeLessThanOrEqual(confirmed + 2 * PUBLISH_CHUNK);
  }, 180_000);
});
