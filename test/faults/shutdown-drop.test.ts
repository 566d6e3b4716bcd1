import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import type { InputState } from '../../src/drops/state/input-state.js';
import { AMQP_URL, type TestTopology } from '../support/broker.js';
import {
  startCli,
  startCliWorker,
  stopCli as stopWorker,
  useWorkerProcesses,
  workerDrop,
} from '../support/cli-worker.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';

/**
 * `warehouse-ingest run <pipeline>` stopped with SIGTERM while it works on a file: with a short
 * grace time the file is interrupted mid-publish (progress kept, no receipt, the file back under
 * its name) and the next start publishes only the rest; with time enough it finishes the file.
 * Either way: exit 0, and every record in the queue exactly once.
 */
const HEADER =
  'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice';
/**
 * One line per order: one record per line. Enough that publishing takes seconds past the first
 * 5,000 confirmed (when the test stops the worker); 100,000 took 70 s of the suite for no more proof.
 */
const BIG_FILE_RECORDS = 40_000;
const SHORT_GRACE_MS = 1000;
/** A file that takes a few seconds, well within a long grace time. */
const SMALL_FILE_RECORDS = 20_000;
/** How long a stop may take past the grace time: the chunks in flight confirmed, the state written, connections closed (a loaded 2-core machine). */
const STOP_MARGIN_MS = 8000;

function ordersFile(tag: string, records: number): { csv: string; shipmentIds: string[] } {
  const shipmentIds = Array.from({ length: records }, (_, i) => `${tag}-${i}`);
  const rows = shipmentIds.map(
    (id, i) => `DEMO,${id},2026-02-03,1,SKU-${i % 97},${1 + (i % 5)},EA,9.99`,
  );
  return { csv: `${[HEADER, ...rows].join('\n')}\n`, shipmentIds };
}

const shipmentIdOf = (body: string) =>
  (JSON.parse(body) as { identifiers: { shipmentId: string } }).identifiers.shipmentId;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const listed = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

function setUp(topology: TestTopology, graceMs: number) {
  return workerDrop(topology, 'stopping-drop', {
    configYaml: `shutdown:\n  graceMs: ${graceMs}\n`,
  });
}

describe('a worker stopped while it works on a file', () => {
  const processes = useWorkerProcesses('shutdown');
  const { workers } = processes;

  it('interrupted mid-publish: exit 0, no receipt, file back, progress kept; the next start publishes the rest, each record once', async () => {
    const { drop, pipeline, env } = setUp(processes.topology, SHORT_GRACE_MS);
    const { csv, shipmentIds } = ordersFile(`STOP${Date.now().toString(36)}`, BIG_FILE_RECORDS);
    writeFileSync(path.join(drop, 'big.csv'), csv);
    const state = path.join(drop, '.warehouse-ingest', 'state', `${sha256(csv)}.json`);
    const ids = path.join(drop, '.warehouse-ingest', 'state', `${sha256(csv)}.ids`);
    const lineage = path.join(drop, '.warehouse-ingest', 'state', `${sha256(csv)}.lineage`);

    const first = startCliWorker(pipeline, env);
    workers.push(first);
    // Mid-publish: the broker holds some of the file's records.
    await expect
      .poll(() => processes.topology.count(), {
        timeout: 90_000,
        interval: 50,
        message: `nothing published: ${first.stderr()}`,
      })
      .toBeGreaterThanOrEqual(5000);
    const stopped = await stopWorker(first, 'SIGTERM', SHORT_GRACE_MS + STOP_MARGIN_MS + 10_000);
    const inQueue = await processes.topology.count();

    expect(stopped.exit, first.stderr()).toBe('code 0');
    expect(stopped.ms).toBeLessThan(SHORT_GRACE_MS + STOP_MARGIN_MS);
    // Released: the file under its own name, no claim, no receipt, nothing settled.
    expect(listed(drop).filter((n) => !n.startsWith('.'))).toEqual(['big.csv']);
    expect(listed(path.join(drop, '.warehouse-ingest', 'claims'))).toEqual([]);
    // The state says where it got to, and gives the attempt back.
    const interrupted = JSON.parse(readFileSync(state, 'utf8')) as InputState;
    expect(interrupted).toMatchObject({
      status: 'retry-scheduled',
      attempts: 0,
      resume: { confirmed: expect.any(Number) },
    });
    expect(interrupted.failures?.at(-1)?.kind).toBe('interrupted');
    const confirmed = interrupted.resume!.confirmed;
    expect(confirmed).toBeGreaterThan(0);
    expect(confirmed).toBeLessThan(BIG_FILE_RECORDS);
    expect(confirmed % 1000).toBe(0);
    // Exactly the confirmed records are in the queue (nothing unconfirmed behind), their ids kept.
    expect(inQueue).toBe(confirmed);
    expect(readFileSync(ids, 'utf8').split('\n').filter(Boolean)).toHaveLength(confirmed);
    expect(readFileSync(lineage, 'utf8').split('\n').filter(Boolean)).toHaveLength(1 + confirmed); // its header, a line a record
    expect(first.count('stop: the grace time is over; interrupting the work still in flight')).toBe(
      1,
    );
    expect(first.count('stopped')).toBe(1);

    const second = startCliWorker(pipeline, env);
    workers.push(second);
    await expect
      .poll(() => listed(path.join(drop, 'processed')).length, {
        timeout: 120_000,
        interval: 200,
        message: `not finished: ${second.stderr()}`,
      })
      .toBe(2);
    const secondStop = await stopWorker(second, 'SIGTERM', 30_000);
    expect(secondStop.exit).toBe('code 0');
    expect(
      second.count(
        'resuming the file after the records an earlier try had confirmed: they are not published again',
      ),
    ).toBe(1);

    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'processed', 'big.csv.receipt.json'), 'utf8'),
    ) as Receipt;
    const response = receipt.response as {
      recordCount: number;
      messageIds: string[];
      correlationId: string;
    };
    expect(receipt).toMatchObject({ outcome: 'accepted', attempt: 1 });
    expect(response.recordCount).toBe(BIG_FILE_RECORDS);
    expect(response.messageIds).toHaveLength(BIG_FILE_RECORDS);
    expect(response.correlationId).toBe(interrupted.resume!.correlationId);
    const final = JSON.parse(readFileSync(state, 'utf8')) as InputState;
    expect(final).toMatchObject({ status: 'receipted', attempts: 1 });
    expect(final.resume).toBeUndefined();

    // The queue: every record exactly once, in file order, under the ids the receipt lists in that order.
    const messages = await drainQueue(AMQP_URL, processes.topology.queue, 120_000);
    const audit = auditQueue(messages, shipmentIdOf);
    const steps = first.lines
      .filter((l) => typeof l.ms === 'number' && String(l.msg).startsWith('stop'))
      .map(
        (l) =>
          `${l.step ? String(l.step) : l.msg === 'stopped' ? 'stopped' : 'grace over'} +${String(l.ms)} ms`,
      );
    console.log(
      `[faults] shutdown mid-file: ${BIG_FILE_RECORDS} records, SIGTERM at ${confirmed} confirmed; stop took ${stopped.ms} ms (grace ${SHORT_GRACE_MS} ms: ${steps.join(', ')}); ` +
        `queue ${audit.messages} messages, ${audit.distinctIds} distinct ids, ${audit.duplicates} duplicates`,
    );
    expect(audit.duplicates).toBe(0);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(audit.idsWithDifferentBodies).toEqual([]);
    expect(messages.map((m) => m.messageId)).toEqual(response.messageIds);
    expect(messages.map((m) => shipmentIdOf(m.body))).toEqual(shipmentIds);
    // The lineage is whole too: the interrupted try's part, then the resumed one's, a line a record in file order.
    const [header, ...records] = readFileSync(lineage, 'utf8').split('\n').filter(Boolean);
    expect(JSON.parse(header!)).toMatchObject({ file: 'big.csv', sha256: sha256(csv) });
    expect(records.map((line) => line.split('\t')[0])).toEqual(
      shipmentIds.map((_, i) => String(i)),
    );
    expect(records.map((line) => line.split('\t')[2])).toEqual(shipmentIds);
    expect(records.map((line) => line.split('\t')[3])).toEqual(response.messageIds);
  }, 300_000);

  it('a file that finishes within the grace time is finished: receipt, exit 0; the next file is not taken', async () => {
    const { drop, pipeline, env } = setUp(processes.topology, 60_000);
    const tag = `FIN${Date.now().toString(36)}`;
    // Large enough (a few seconds each) that the signal surely lands while the first one is worked on, even on a loaded machine.
    const files: Record<string, { csv: string; shipmentIds: string[] }> = {
      'a.csv': ordersFile(`${tag}A`, SMALL_FILE_RECORDS),
      'b.csv': ordersFile(`${tag}B`, SMALL_FILE_RECORDS),
    };
    for (const [name, { csv }] of Object.entries(files)) writeFileSync(path.join(drop, name), csv);

    const worker = startCliWorker(pipeline, env);
    workers.push(worker);
    // Right after a file was claimed.
    const claims = () => listed(path.join(drop, '.warehouse-ingest', 'claims'));
    await expect.poll(() => claims().length, { timeout: 60_000, interval: 2 }).toBe(1);
    const taken = claims()[0]!.replace(/^.*~/, ''); // <claimed-at>~<worker>~<name>
    const left = taken === 'a.csv' ? 'b.csv' : 'a.csv';
    const stopped = await stopWorker(worker, 'SIGTERM', 60_000);
    expect(stopped.exit, worker.stderr()).toBe('code 0');
    expect(
      worker.count('stop: the grace time is over; interrupting the work still in flight'),
    ).toBe(0);

    expect(listed(path.join(drop, 'processed')).sort()).toEqual([taken, `${taken}.receipt.json`]);
    expect(
      listed(drop)
        .filter((n) => !n.startsWith('.'))
        .sort(),
    ).toEqual([left, 'processed'].sort());
    expect(listed(path.join(drop, '.warehouse-ingest', 'claims'))).toEqual([]);
    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'processed', `${taken}.receipt.json`), 'utf8'),
    ) as Receipt;
    expect(receipt).toMatchObject({
      outcome: 'accepted',
      response: { recordCount: SMALL_FILE_RECORDS },
    });
    expect(
      existsSync(path.join(drop, '.warehouse-ingest', 'state', `${sha256(files[left]!.csv)}.json`)),
    ).toBe(false);

    const messages = await drainQueue(AMQP_URL, processes.topology.queue);
    expect(messages.map((m) => shipmentIdOf(m.body))).toEqual(files[taken]!.shipmentIds);
    console.log(
      `[faults] shutdown with time enough: ${taken} (${SMALL_FILE_RECORDS} records) finished, stop took ${stopped.ms} ms`,
    );
  }, 120_000);

  it('run --once stopped mid-file: prints its summary (interrupted: 1) and exits 0, progress kept', async () => {
    const { drop, pipeline, env } = setUp(processes.topology, 500);
    await drainQueue(AMQP_URL, processes.topology.queue, 60_000); // whatever an earlier test left
    const { csv } = ordersFile(`ONCE${Date.now().toString(36)}`, 60_000);
    writeFileSync(path.join(drop, 'once.csv'), csv);
    const worker = startCli(['run', pipeline, '--once'], env);
    workers.push(worker);
    await expect
      .poll(() => processes.topology.count(), {
        timeout: 90_000,
        interval: 50,
        message: worker.stderr(),
      })
      .toBeGreaterThanOrEqual(3000);
    const stopped = await stopWorker(worker, 'SIGTERM', 30_000);
    expect(stopped.exit, worker.stderr()).toBe('code 0');
    expect(
      worker.lines.find((l) => 'pipeline' in l && 'interrupted' in l && !('msg' in l)),
    ).toMatchObject({ accepted: 0, interrupted: 1 });
    expect(listed(drop).filter((n) => !n.startsWith('.'))).toEqual(['once.csv']);
    const state = JSON.parse(
      readFileSync(path.join(drop, '.warehouse-ingest', 'state', `${sha256(csv)}.json`), 'utf8'),
    ) as InputState;
    expect(state.resume?.confirmed).toBe(await processes.topology.count());
    await drainQueue(AMQP_URL, processes.topology.queue, 60_000);
  }, 120_000);
});
