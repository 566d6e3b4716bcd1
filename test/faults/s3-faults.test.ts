import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import type { RunSummary } from '../../src/drops/runner.js';
import { createS3Drop, S3DropError } from '../../src/stores/s3/index.js';
import { DropUnavailable } from '../../src/errors.js';
import { AMQP_URL } from '../support/broker.js';
import {
  demoOrdersCsv,
  shipmentIdOf,
  startDropHarness,
  timed,
  type DropHarness,
} from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { startS3rver, type S3rver } from '../support/s3rver.js';
import { tapStore, type StoreTap } from '../support/store-tap.js';
import { readAll } from '../stores/store-contract.js';

/**
 * The S3 drop against a real S3-protocol server (s3rver, its own process) that dies in the
 * middle of a look and stays away for a while, then comes back on the same port with the same
 * data. Files it failed stay where they are and are processed once it is back.
 */
const TIMEOUT_MS = 2000;
const ORDERS = 50;
/** How long the server stays away before it is restarted. */
const AWAY_MS = 1500;

describe('S3 faults', () => {
  let s3: S3rver;
  let tap: StoreTap;
  let harness: DropHarness;
  const figures: string[] = [];
  let folder = 0;

  beforeAll(async () => {
    s3 = await startS3rver();
    tap = tapStore(
      createS3Drop({
        bucket: s3.bucket,
        region: s3.region,
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
        timeoutMs: TIMEOUT_MS,
      }),
    );
    harness = await startDropHarness(tap.store, 's3-faults');
  });
  afterAll(async () => {
    console.log(`[faults] S3: ${figures.join('; ')}`);
    tap?.before(undefined);
    await harness?.close();
    await tap?.store.close();
    await s3?.stop();
  });

  async function put(name: string, content: string): Promise<void> {
    await s3.client.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: name,
        Body: content,
        ContentLength: Buffer.byteLength(content),
      }),
    );
  }
  async function receiptOf(name: string): Promise<Receipt | undefined> {
    if (!(await tap.store.stat(`processed/${name}.receipt.json`))) return undefined;
    return JSON.parse(
      (await readAll(await tap.store.read(`processed/${name}.receipt.json`))).toString('utf8'),
    ) as Receipt;
  }
  /** Fresh files (unique content) under the drop's root; returns their names. */
  async function dropFiles(count: number, label: string): Promise<string[]> {
    folder += 1;
    const names = Array.from({ length: count }, (_, i) => `${label}-${folder}-${i}.csv`);
    for (const [n, name] of names.entries())
      await put(name, demoOrdersCsv(`S3-${label}-${folder}-${n}-${Date.now()}`, ORDERS));
    return names;
  }

  /** Looks until every name has its receipt in processed/. */
  async function processedOnceBack(names: string[]): Promise<number> {
    let looks = 0;
    await vi.waitFor(
      async () => {
        looks += 1;
        await harness.runner.runOnce().catch(() => undefined); // the first look may still meet the restart
        for (const name of names)
          expect(
            await receiptOf(name),
            `${name}: ${harness.warnings.slice(-2).join('')}`,
          ).toMatchObject({ outcome: 'accepted' });
      },
      { timeout: 30_000, interval: 250 },
    );
    return looks;
  }

  it('a server gone for a while mid-look: files it failed stay in the drop and are processed once it is back', async () => {
    const names = await dropFiles(5, 'away');
    // The fault, at an exact step: the server dies as the runner starts downloading the third file.
    tap.before(async (operation, name) => {
      if (operation === 'read' && name === names[2]) {
        tap.before(undefined);
        await s3.kill();
      }
    });
    const cut = await timed(() => harness.runner.runOnce());
    expect(cut.outcome).toMatchObject({ accepted: 2, retried: 3 } satisfies Partial<RunSummary>);

    // Away for a while: every look meanwhile fails plainly and promptly (the SDK's retries are bounded too).
    const awayLooks: Array<{ outcome: RunSummary | Error; ms: number }> = [];
    for (const until = performance.now() + AWAY_MS; performance.now() < until; ) {
      awayLooks.push(await timed(() => harness.runner.runOnce()));
      await new Promise((resolve) => setTimeout(resolve, 100)); // bounded pacing: a poll interval
    }
    for (const look of awayLooks) {
      expect(look.outcome).toBeInstanceOf(DropUnavailable); // an outage, mapped once by the store
      expect((look.outcome as Error).cause).toBeInstanceOf(S3DropError);
      expect(look.ms).toBeLessThan(TIMEOUT_MS * 3);
    }
    const away = { looks: awayLooks.length, ms: Math.max(...awayLooks.map((l) => l.ms)) };

    await s3.restart(); // same port, same data directory
    const looks = await processedOnceBack(names);
    const receipts = await Promise.all(names.map(receiptOf));
    for (const name of names)
      expect(await tap.store.stat(name), `${name} left in the drop`).toBeUndefined();

    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    figures.push(
      `server killed on the 3rd of 5 files (that look ${cut.ms} ms; ${away.looks} looks while away, the longest ${away.ms} ms), all processed ${looks} look(s) after the restart, ` +
        `records ${names.length * ORDERS}, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(receipts.map((r) => r?.attempt)).toEqual([1, 1, 1, 1, 1]);
    expect(audit.messages).toBe(names.length * ORDERS);
    expect(audit.distinctIds).toBe(names.length * ORDERS);
    const ids = receipts.flatMap((r) => (r!.response as { messageIds: string[] }).messageIds);
    expect(new Set(ids)).toEqual(new Set(audit.bodyOf.keys()));
  }, 90_000);

  it('a frozen server (SIGSTOP) mid-look: the look ends within the SDK bounded attempts; the file is processed after the thaw', async () => {
    const [name] = await dropFiles(1, 'frozen');
    tap.before(async (operation, key) => {
      if (operation === 'read' && key === name) {
        tap.before(undefined);
        s3.freeze();
      }
    });
    let frozen: { outcome: RunSummary | Error; ms: number };
    try {
      frozen = await timed(() => harness.runner.runOnce());
    } finally {
      s3.thaw();
    }
    // Each of the SDK's 3 attempts is cut at the request timeout: bounded, never hung.
    expect(frozen.outcome).toMatchObject({ accepted: 0, retried: 1 } satisfies Partial<RunSummary>);
    expect(frozen.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(frozen.ms).toBeLessThan(TIMEOUT_MS * 3 + 5000);
    expect(await tap.store.stat(name!), 'the file stays in the drop').toBeDefined();

    const looks = await processedOnceBack([name!]);
    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    figures.push(
      `server frozen on a download: that look ended in ${frozen.ms} ms (request timeout ${TIMEOUT_MS} ms), processed ${looks} look(s) after the thaw, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(audit.messages).toBe(ORDERS);
    expect(audit.distinctIds).toBe(ORDERS);
  }, 90_000);

  /**
   * Drops one file, kills the server just before the first write `at` matches, and checks the
   * look was retried with everything already published; then restarts it and waits for the file.
   */
  async function killBeforeWrite(tag: string, at: (key: string) => boolean) {
    const [name] = await dropFiles(1, tag);
    tap.before(async (operation, key) => {
      if (operation === 'write' && at(key)) {
        tap.before(undefined);
        await s3.kill();
      }
    });
    const cut = await timed(() => harness.runner.runOnce());
    expect(cut.outcome).toMatchObject({ accepted: 0, retried: 1 } satisfies Partial<RunSummary>);
    expect(await harness.topology.count(), 'published before the server died').toBe(ORDERS);

    await s3.restart();
    const looks = await processedOnceBack([name!]);
    const receipt = await receiptOf(name!);
    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    return { name: name!, looks, receipt, audit };
  }

  it('a server gone after the broker confirmed (before the ids are recorded): resumed from the confirmed point, nothing published twice, one receipt', async () => {
    const { name, looks, receipt, audit } = await killBeforeWrite(
      'confirmed',
      (key) => key.startsWith('.warehouse-ingest/state/') && key.endsWith('.ids'),
    );
    figures.push(
      `server killed between the confirm and the state: records ${ORDERS}, in the queue ${audit.messages} (${audit.distinctIds} distinct ids), duplicates ${audit.duplicates}, processed ${looks} look(s) after the restart`,
    );
    // The resume point was recorded after the confirmed chunk: the next try publishes nothing again,
    // and derives the ids of the records it skips from the same bytes (they are in the receipt).
    expect(audit.messages).toBe(ORDERS);
    expect(audit.distinctIds).toBe(ORDERS);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(new Set((receipt!.response as { messageIds: string[] }).messageIds)).toEqual(
      new Set(audit.bodyOf.keys()),
    );
    expect(await tap.store.stat(name)).toBeUndefined();
  }, 90_000);

  it('a server killed after the state is recorded, before the receipt: the receipt is completed later, nothing published twice', async () => {
    const { name, looks, audit } = await killBeforeWrite('receipt', (key) =>
      key.endsWith('.receipt.json'),
    );
    figures.push(
      `server killed between the state and the receipt: receipt completed ${looks} look(s) after the restart, records ${ORDERS}, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(audit.messages).toBe(ORDERS); // the state said "published": not sent again
    expect(await tap.store.stat(name)).toBeUndefined();
  }, 90_000);
});
