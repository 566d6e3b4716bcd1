/**
 * The embedded history on a full disk (issue 38, item 15): its folder is a real tmpfs (mounted by
 * the test: it runs as root, as `npm test` does) too small for what is written. The writer says
 * the store is unreachable and keeps the rows; once a little space is freed (the tmpfs grown by
 * 3 MiB, as the attack freed 3 MiB), every row is written — its retries must not fill the disk
 * again themselves.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { batchWrites } from '../../src/history/entries.js';
import { createHistoryMetrics } from '../../src/history/metrics.js';
import { createHistorySpool } from '../../src/history/spool.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('history-disk-full-');
const folder = path.join(temp.dir, 'history');
const mount = (size: string, remount = false) =>
  execFileSync('mount', [
    '-t',
    'tmpfs',
    '-o',
    `${remount ? 'remount,' : ''}size=${size},mode=0700`,
    'tmpfs',
    folder,
  ]);

beforeAll(() => {
  mkdirSync(folder);
  // Fails loudly (no skip) where the test cannot mount: it needs root, as `npm test` does.
  mount('1m');
});
afterAll(() => {
  execFileSync('umount', ['-l', folder]);
});

const RECORDS = 1000;
const batch = (n: number) =>
  batchWrites(
    {
      correlationId: `full-${n}`,
      businessId: 'ACME',
      source: { endpoint: '/api/v2/sales-orders' },
      kind: 'sales-orders',
      recordCount: RECORDS,
      outcome: 'accepted',
      at: new Date(),
    },
    [
      {
        first: 0,
        messageIds: Array.from({ length: RECORDS }, () => randomUUID()),
        references: Array.from({ length: RECORDS }, (_, i) => `FULL-${n}-${i}`),
      },
    ],
  );

describe('the embedded history on a full disk', () => {
  it('keeps the rows while the disk is full, and writes them all once 3 MiB are freed', async () => {
    const store = createEmbeddedHistory({ directory: folder });
    const registry = new Registry();
    const metrics = createHistoryMetrics(registry);
    const writer = createHistoryWriter({
      store,
      log: createLogger({ level: 'silent' }),
      metrics,
      maxPendingRows: 100_000,
      flushMs: 10,
      retryDelayMs: [20, 200],
      spool: createHistorySpool(path.join(folder, 'spool')),
    });
    try {
      for (let n = 0; n < 8; n++) writer.add(batch(n));
      await vi.waitFor(() => expect(writer.health).toBe('unreachable'), { timeout: 30_000 });
      // Stays unreachable while the disk is full: tried again and again meanwhile.
      await writer.flush();
      expect(writer.pendingRows).toBeGreaterThan(0);
      mount('4m', true);
      await vi.waitFor(() => expect(writer.pendingRows).toBe(0), {
        timeout: 60_000,
        interval: 100,
      });
      expect(writer.health).toBe('ok');
      for (let n = 0; n < 8; n++)
        expect(await store.batches({ operator: true }, `full-${n}`)).toHaveLength(1);
    } finally {
      await writer.close();
      await store.close();
    }
  }, 120_000);
});
