import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import type { RunSummary } from '../../src/drops/runner.js';
import { createSftpDrop, SftpError } from '../../src/stores/sftp/index.js';
import { DropUnavailable } from '../../src/errors.js';
import { heartbeatInterval } from '../../src/drops/try/index.js';
import {
  demoOrdersCsv,
  shipmentIdOf,
  startDropHarness,
  timed,
  type DropHarness,
} from '../support/drop-harness.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { sftpOptionsFor } from '../support/sftp-fixture.js';
import { startSshd, type TestSshd } from '../support/sshd.js';
import { tapStore, type StoreTap } from '../support/store-tap.js';
import { AMQP_URL } from '../support/broker.js';

/**
 * The SFTP drop against a real OpenSSH server that dies in the middle of a download, and one
 * that freezes (SIGSTOP): the runner must fail the file within its per-call timeout, never
 * hang, and process it once the server is back — with a receipt, and published once.
 */
const TIMEOUT_MS = 2000;
/** ~1.3 MB: many SFTP reads (up to 64 KiB each), so a download can be caught half-way. */
const BIG_ORDERS = 10_000;
const FROZEN_ORDERS = 3_000;
const SMALL_ORDERS = 20;

describe('SFTP faults', () => {
  let sshd: TestSshd;
  let tap: StoreTap;
  let harness: DropHarness;
  let drop: string;
  const figures: string[] = [];

  beforeAll(async () => {
    sshd = await startSshd();
    drop = path.join(sshd.dataDir, 'drop');
    mkdirSync(drop);
    tap = tapStore(
      createSftpDrop(sftpOptionsFor(sshd, { timeoutMs: TIMEOUT_MS, readyTimeoutMs: TIMEOUT_MS })),
    );
    harness = await startDropHarness(tap.store, 'sftp-faults');
  });
  afterAll(async () => {
    console.log(`[faults] SFTP: ${figures.join('; ')}`);
    sshd?.thaw();
    await harness?.close();
    await tap?.store.close();
    await sshd?.stop();
  });

  /**
   * Looks at the drop until `file` has a receipt in processed/ (a look after a claim's lease may
   * take it over). The look that wrote the receipt must also have moved the file there: a receipt
   * never stands next to a file that is not there.
   */
  async function processedOnceBack(file: string): Promise<{ receipt: Receipt; looks: number }> {
    let looks = 0;
    await vi.waitFor(
      async () => {
        looks += 1;
        await harness.runner.runOnce().catch(() => undefined); // the first looks may still meet the reconnect
        expect(
          existsSync(path.join(drop, 'processed', `${file}.receipt.json`)),
          harness.warnings.slice(-3).join(''),
        ).toBe(true);
      },
      { timeout: 60_000, interval: 250 }, // a claim left behind is taken over after the 10 s lease
    );
    expect(
      {
        processed: existsSync(path.join(drop, 'processed', file)),
        inDrop: existsSync(path.join(drop, file)),
        claims: claims(),
      },
      `${file} after the look that wrote its receipt: ${harness.warnings.slice(-2).join('')}`,
    ).toEqual({ processed: true, inDrop: false, claims: [] });
    return {
      receipt: JSON.parse(
        readFileSync(path.join(drop, 'processed', `${file}.receipt.json`), 'utf8'),
      ) as Receipt,
      looks,
    };
  }

  const claims = () =>
    existsSync(path.join(drop, '.warehouse-ingest', 'claims'))
      ? readdirSync(path.join(drop, '.warehouse-ingest', 'claims'))
      : [];

  it('a server killed mid-download: the file is retried, and processed once the server is back', async () => {
    const csv = demoOrdersCsv(`SFTP-KILL-${Date.now()}`, BIG_ORDERS);
    writeFileSync(path.join(drop, 'big.csv'), csv);
    const size = Buffer.byteLength(csv);

    const hold = tap.holdNextRead('big.csv');
    const run = harness.runner.runOnce();
    await hold.inProgress; // the event: the first bytes of the download reached the runner
    await sshd.kill();
    hold.release();
    const { outcome: first, ms } = await timed(() => run);
    const delivered = [...tap.delivered]
      .filter(([name]) => name.endsWith('big.csv'))
      .reduce((sum, [, bytes]) => sum + bytes, 0);
    expect(first).toMatchObject({ accepted: 0, retried: 1 } satisfies Partial<RunSummary>);
    expect(delivered, 'the download was cut short').toBeLessThan(size);
    expect(await harness.topology.count()).toBe(0);

    // While the server is down, a look fails fast and plainly.
    const down = await timed(() => harness.runner.runOnce());
    expect(down.outcome).toBeInstanceOf(DropUnavailable); // an outage, mapped once by the store
    expect((down.outcome as Error).cause).toBeInstanceOf(SftpError);
    expect(down.ms).toBeLessThan(TIMEOUT_MS * 2);

    await sshd.restart();
    const { receipt, looks } = await processedOnceBack('big.csv');
    expect(receipt).toMatchObject({
      outcome: 'accepted',
      file: { name: 'big.csv', size },
      response: { recordCount: BIG_ORDERS },
    });
    expect(existsSync(path.join(drop, 'big.csv'))).toBe(false);
    expect(existsSync(path.join(drop, 'processed', 'big.csv'))).toBe(true);

    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    figures.push(
      `killed after ${delivered} of ${size} bytes (failed run ${ms} ms, look while down ${down.ms} ms), processed ${looks} look(s) after the restart, ` +
        `records ${(receipt.response as { recordCount: number }).recordCount}, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(audit.messages).toBe(BIG_ORDERS);
    expect(audit.distinctIds).toBe(BIG_ORDERS);
    expect(new Set((receipt.response as { messageIds: string[] }).messageIds)).toEqual(
      new Set(audit.bodyOf.keys()),
    );
  }, 90_000);

  it('a frozen server: calls end at the per-call timeout instead of hanging; the file is processed after the thaw', async () => {
    const csv = demoOrdersCsv(`SFTP-FREEZE-${Date.now()}`, FROZEN_ORDERS);
    writeFileSync(path.join(drop, 'frozen.csv'), csv);

    const hold = tap.holdNextRead('frozen.csv');
    const run = harness.runner.runOnce();
    await hold.inProgress;
    sshd.freeze();
    hold.release();
    let frozenRun: { outcome: RunSummary | Error; ms: number };
    let frozenLook: { outcome: RunSummary | Error; ms: number };
    try {
      frozenRun = await timed(() => run);
      // A look while frozen: the connection opens at TCP level but the server never speaks.
      frozenLook = await timed(() => harness.runner.runOnce());
    } finally {
      sshd.thaw();
    }
    // The download's next chunk times out, then putting the claim back does too: bounded, not hung.
    expect(frozenRun.outcome).toMatchObject({
      accepted: 0,
      retried: 1,
    } satisfies Partial<RunSummary>);
    expect(frozenRun.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(frozenRun.ms).toBeLessThan(TIMEOUT_MS * 5);
    expect(frozenLook.outcome).toBeInstanceOf(DropUnavailable);
    const timeout = (frozenLook.outcome as Error).cause as SftpError;
    expect(timeout).toBeInstanceOf(SftpError);
    expect(timeout.code).toBe('sftp-timeout');
    expect(frozenLook.ms).toBeLessThan(TIMEOUT_MS * 3);
    expect(harness.warnings.join('')).toMatch(/no data for 2000 ms/);

    const { receipt, looks } = await processedOnceBack('frozen.csv');
    expect(receipt).toMatchObject({
      outcome: 'accepted',
      file: { name: 'frozen.csv' },
      response: { recordCount: FROZEN_ORDERS },
    });
    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    figures.push(
      `frozen run ended in ${frozenRun.ms} ms, a look at the frozen server in ${frozenLook.ms} ms (timeout ${TIMEOUT_MS} ms), processed ${looks} look(s) after the thaw, ` +
        `records ${FROZEN_ORDERS}, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(audit.messages).toBe(FROZEN_ORDERS);
    expect(audit.distinctIds).toBe(FROZEN_ORDERS);
  }, 90_000);

  it('a server killed after the broker confirmed, before the receipt: the receipt is completed later, nothing published twice', async () => {
    writeFileSync(
      path.join(drop, 'confirmed.csv'),
      demoOrdersCsv(`SFTP-RECEIPT-${Date.now()}`, SMALL_ORDERS),
    );
    tap.before(async (operation, name) => {
      if (operation === 'write' && name.endsWith('confirmed.csv.receipt.json')) {
        tap.before(undefined);
        await sshd.kill();
      }
    });
    const { outcome: cut } = await timed(() => harness.runner.runOnce());
    expect(cut).toMatchObject({ accepted: 0, retried: 1 } satisfies Partial<RunSummary>);
    expect(await harness.topology.count(), 'published before the server died').toBe(SMALL_ORDERS);

    await sshd.restart();
    const { receipt, looks } = await processedOnceBack('confirmed.csv');
    const audit = auditQueue(await drainQueue(AMQP_URL, harness.topology.queue), shipmentIdOf);
    figures.push(
      `killed between the confirm and the receipt: receipt completed ${looks} look(s) after the restart (attempt ${receipt.attempt}), records ${SMALL_ORDERS}, in the queue ${audit.messages}, duplicates ${audit.duplicates}`,
    );
    expect(receipt).toMatchObject({ outcome: 'accepted', response: { recordCount: SMALL_ORDERS } });
    expect(audit.messages).toBe(SMALL_ORDERS); // the state said "published": not sent again
    expect(existsSync(path.join(drop, 'confirmed.csv'))).toBe(false);
  }, 90_000);

  it('the claim heartbeat never races the move to processed/ (found by the frozen-server case): it is stopped before the settle', async () => {
    writeFileSync(
      path.join(drop, 'renewed.csv'),
      demoOrdersCsv(`SFTP-RENEW-${Date.now()}`, SMALL_ORDERS),
    );
    // Hold the settling move for longer than one heartbeat (a quarter of the 10 s lease): a
    // heartbeat still running would rename the claim meanwhile, the two renames of one claim
    // racing. It is stopped before the settle, so no renewal begins.
    let renewalStarted!: () => void;
    const renewal = new Promise<void>((resolve) => (renewalStarted = resolve));
    let movesHeld = 0;
    let renewed = false;
    void renewal.then(() => {
      renewed = true;
    });
    tap.before(async (operation, name) => {
      if (operation !== 'rename') return;
      const [, to = ''] = name.split(' -> ');
      if (
        to.startsWith('.warehouse-ingest/claims/') &&
        name.startsWith('.warehouse-ingest/claims/')
      )
        renewalStarted();
      if (to === 'processed/renewed.csv') {
        movesHeld += 1;
        let timer: NodeJS.Timeout | undefined;
        // An observation window (a renewal that does not come can only be waited for), cut short
        // if one does come.
        await Promise.race([
          renewal,
          new Promise(
            (windowOver) => (timer = setTimeout(windowOver, heartbeatInterval(10_000) + 500)),
          ),
        ]);
        clearTimeout(timer);
      }
    });
    try {
      const summary = await harness.runner.runOnce();
      expect(movesHeld).toBe(1);
      expect(renewed, 'no claim renewal while the move was held').toBe(false);
      expect(summary, harness.warnings.slice(-2).join('')).toMatchObject({
        accepted: 1,
        retried: 0,
      } satisfies Partial<RunSummary>);
    } finally {
      tap.before(undefined);
    }
    expect({
      processed: existsSync(path.join(drop, 'processed', 'renewed.csv')),
      inDrop: existsSync(path.join(drop, 'renewed.csv')),
      claims: claims(),
    }).toEqual({
      processed: true,
      inDrop: false,
      claims: [],
    });
    expect(await harness.topology.count()).toBe(SMALL_ORDERS);
    await drainQueue(AMQP_URL, harness.topology.queue);
  }, 30_000);
});
