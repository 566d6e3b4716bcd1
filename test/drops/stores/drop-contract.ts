import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/log.js';
import { createIngest } from '../../../src/ingest/flow.js';
import type { Receipt } from '../../../src/drops/receipts.js';
import { compileRoutingKey } from '../../../src/ingest/route.js';
import { pipelineSchema, type PipelineDefinition } from '../../../src/drops/definition.js';
import type { RabbitMqPublisher } from '../../../src/publish/index.js';
import { createRabbitMqLease, type DropLease } from '../../../src/drops/lease.js';
import { createDropRunner, type DropRunner } from '../../../src/drops/runner.js';
import { statusOf } from '../../../src/cli/status.js';
import type { InputState } from '../../../src/drops/state/input-state.js';
import type { DropStore } from '../../../src/stores/store.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../../support/broker.js';
import { startProxiedPublisher } from '../../support/proxied-publisher.js';
import type { TcpProxy } from '../../support/tcp-proxy.js';
import { tempFolder } from '../../support/temp.js';
import { readAll, type StoreFixture } from '../../stores/store-contract.js';

/** ACME's sales-orders onboarding profile: what its v1 orders cannot carry. */
export const PROFILE = {
  'identifiers.customerId': 'CUST-ACME',
  'identifiers.site': 'UK01',
  'identifiers.warehouse': 'WH-MAN',
  'identifiers.ownerId': 'ACME',
  'order.class': 'B2C',
  'customer.name': 'Acme Stores',
  'shipping.method': 'STANDARD',
  'shipping.route': 'NW-03',
  'shipping.carrier': 'DPD',
  'shipping.shippingLane': 'LANE-2',
  'financial.currency': 'GBP',
  shipAddresses: [
    {
      table: 'SHIPTO',
      addressId: 'A1',
      address: { name: 'Store', line1: '1 High St', city: 'Leeds', postcode: 'LS1', country: 'GB' },
    },
  ],
  shipContacts: [
    {
      table: 'CONTACT',
      lineId: 'C1',
      personal: { firstName: 'Ann', lastName: 'Lee' },
      contact: { email: 'a@example.com', phone: '1' },
    },
  ],
};

const HEADER =
  'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice';
/** A valid v1 CSV of `orders` orders with two lines each; `tag` makes its bytes unique. */
export function ordersCsv(tag: string, orders = 2): string {
  const rows = [HEADER];
  for (let i = 0; i < orders; i++) {
    rows.push(
      `ACME,${tag}-${i},2026-02-03,1,SKU-1,2,EA,9.99`,
      `ACME,${tag}-${i},2026-02-03,2,SKU-2,1,EA,4.50`,
    );
  }
  return `${rows.join('\n')}\n`;
}

/**
 * What every file source promises, run against each store (local folder, real OpenSSH SFTP,
 * real S3-protocol server) with a real RabbitMQ behind the pipeline.
 */
export function describeDropPipeline(
  name: string,
  makeFixture: () => Promise<StoreFixture>,
  traits: { atomicRename: boolean },
): void {
  describe(`file drop contract: ${name}`, () => {
    let f: StoreFixture;
    let topology: TestTopology;
    let proxy: TcpProxy;
    let publisher: RabbitMqPublisher;
    let proxied: Awaited<ReturnType<typeof startProxiedPublisher>>;
    const spool = tempFolder('spool-');
    // Warnings are kept so a failing test can say why a file was retried.
    const warnings: string[] = [];
    const log = createLogger({
      level: 'warn',
      destination: { write: (line: string) => void warnings.push(line) },
    });
    let folder = 0;

    beforeAll(async () => {
      f = await makeFixture();
      topology = await declareTestTopology({ bindingKeys: ['#'] });
      proxied = await startProxiedPublisher(topology.exchange, log);
      ({ proxy, publisher } = proxied);
    });
    afterAll(async () => {
      await proxied.close();
      await topology.cleanup();
      await f.store.close();
      await f.cleanup();
    });

    /** A pipeline over a fresh sub-folder of the drop, so tests never see each other's files. */
    function pipelineIn(overrides: Record<string, unknown> = {}): {
      runner: (workerId?: string, store?: DropStore, lease?: DropLease) => DropRunner;
      dir: string;
      pipeline: PipelineDefinition;
      store: DropStore;
    } {
      const dir = `t${++folder}`;
      const pipeline = pipelineSchema.parse({
        name: `contract-${process.pid}-${folder}`,
        businessId: 'ACME',
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: '/unused' },
        readiness: { strategy: 'rename' },
        ...overrides,
      });
      const ingest = createIngest({
        publisher,
        routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
      });
      const runner = (workerId = 'w1', store = f.store, lease?: DropLease) =>
        createDropRunner({
          pipeline,
          store: scoped(store, dir),
          ingest,
          onboarding: { ACME: { 'sales-orders': PROFILE } },
          log,
          spoolDirectory: spool.dir,
          workerId,
          ...(lease ? { lease } : {}),
        });
      return { runner, dir, pipeline, store: scoped(f.store, dir) };
    }

    async function receiptAt(name: string): Promise<Receipt> {
      return JSON.parse((await readAll(await f.store.read(name))).toString('utf8')) as Receipt;
    }

    const stateOf = async (dir: string, bytes: string) =>
      JSON.parse(
        (
          await readAll(
            await f.store.read(
              `${dir}/.warehouse-ingest/state/${createHash('sha256').update(bytes).digest('hex')}.json`,
            ),
          )
        ).toString('utf8'),
      ) as InputState;

    it('publishes a ready file, writes its receipt next to it in processed/, and moves it there', async () => {
      const { runner, dir } = pipelineIn();
      const csv = ordersCsv('A');
      await f.put(`${dir}/orders A.csv`, csv);
      const summary = await runner().runOnce();
      expect(summary).toMatchObject({ accepted: 1, rejected: 0, retried: 0 });
      expect(await f.has(`${dir}/orders A.csv`)).toBe(false);
      expect(await f.has(`${dir}/processed/orders A.csv`)).toBe(true);
      const receipt = await receiptAt(`${dir}/processed/orders A.csv.receipt.json`);
      const messages = await topology.messages();
      expect(receipt).toMatchObject({
        outcome: 'accepted',
        pipeline: expect.stringMatching(/^contract-/),
        businessId: 'ACME',
        kind: 'sales-orders',
        format: 'v1-csv',
        attempt: 1,
        file: {
          name: 'orders A.csv',
          size: Buffer.byteLength(csv),
          sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        },
        response: {
          success: true,
          recordCount: 2,
          messageIds: messages.map((m) => m.properties.messageId),
        },
      });
      expect(messages[0]!.properties.headers).toMatchObject({
        'business-id': 'ACME',
        'source-name': expect.stringMatching(/^contract-/),
      });
    });

    it('never takes a file still being written: temporary names, no marker yet, or still changing', async () => {
      const marker = pipelineIn({ readiness: { strategy: 'marker' } });
      await f.put(`${marker.dir}/m.csv`, ordersCsv('M'));
      await f.put(`${marker.dir}/upload.csv.part`, 'AccountID,Ord');
      const first = marker.runner();
      expect(await first.runOnce(), 'before the marker').toMatchObject({ accepted: 0 });
      await f.put(`${marker.dir}/m.csv.done`, '');
      expect(await first.runOnce(), 'after the marker').toMatchObject({ accepted: 1 });
      expect(await f.has(`${marker.dir}/m.csv.done`)).toBe(false);
      expect(await f.has(`${marker.dir}/upload.csv.part`)).toBe(true);

      // A quiet period far longer than two looks take, even on a loaded machine.
      const stable = pipelineIn({ readiness: { strategy: 'stable', checks: 2, quietMs: 2_000 } });
      const runner = stable.runner();
      await f.put(`${stable.dir}/s.csv`, 'AccountID,OrdNumber');
      expect(await runner.runOnce(), 'first look').toMatchObject({ accepted: 0, arriving: 1 });
      // The writer pauses: a second look sees the same size and mtime, but not for the quiet period.
      expect(await runner.runOnce(), 'paused writer').toMatchObject({
        accepted: 0,
        rejected: 0,
        arriving: 1,
      });
      await f.put(`${stable.dir}/s.csv`, ordersCsv('S')); // still growing
      expect(await runner.runOnce(), 'after it grew').toMatchObject({ accepted: 0, arriving: 1 });
      await expect
        .poll(async () => (await runner.runOnce()).accepted, { timeout: 15_000, interval: 100 })
        .toBe(1);
      expect(await receiptAt(`${stable.dir}/processed/s.csv.receipt.json`)).toMatchObject({
        response: { recordCount: 2 },
      });
      await topology.messages();
    });

    it('run --once waits out the quiet period: a writer pausing between writes is never read in the middle', async () => {
      const { runner, dir } = pipelineIn({
        readiness: { strategy: 'stable', checks: 2, quietMs: 1_500, intervalMs: 50 },
      });
      const whole = ordersCsv('PAUSE', 3);
      const rows = whole.split('\n');
      await f.put(`${dir}/slow.csv`, `${rows.slice(0, 3).join('\n')}\n`);
      // Counts the runner's looks (each lists the drop's own folder), so the pause is measured in looks.
      let looks = 0;
      const counting: DropStore = Object.assign(Object.create(f.store) as DropStore, {
        list: (folder?: string) => {
          if (folder === dir) looks += 1;
          return f.store.list(folder);
        },
      });
      const once = runner('w1', counting).runOnce({ waitForArriving: true });
      // The writer pauses for more looks than `checks` (2) stable ones, then writes the rest.
      await vi.waitFor(() => expect(looks).toBeGreaterThanOrEqual(4), {
        timeout: 10_000,
        interval: 20,
      });
      await f.put(`${dir}/slow.csv`, whole);
      expect(await once).toMatchObject({ accepted: 1, rejected: 0, arriving: 0 });
      expect(await receiptAt(`${dir}/processed/slow.csv.receipt.json`)).toMatchObject({
        outcome: 'accepted',
        response: { recordCount: 3 },
      });
      expect(await topology.count()).toBe(3);
      await topology.messages();
    });

    it('moves an invalid file to failed/ with a receipt listing every error by line and column; publishes nothing', async () => {
      const { runner, dir } = pipelineIn();
      await f.put(
        `${dir}/bad.csv`,
        `${HEADER}\nACME,SO-1,2026-02-03,1,SKU-1,12abc,EA,9.99\nOTHER,SO-2,03/02/2026,1,SKU-1,1,EA,1\n`,
      );
      expect(await runner().runOnce()).toMatchObject({ rejected: 1 });
      expect(await f.has(`${dir}/failed/bad.csv`)).toBe(true);
      const receipt = await receiptAt(`${dir}/failed/bad.csv.receipt.json`);
      expect(receipt.outcome).toBe('rejected');
      expect(receipt.response).toMatchObject({
        type: '/problems/validation-failed',
        status: 400,
        errors: [
          {
            index: 0,
            errors: ['line 2, column oOrderLines_Qty: Expected a number, received "12abc"'],
          },
          {
            index: 1,
            errors: [
              expect.stringMatching(/^line 3, column DueOutDate: /),
              'line 3, column AccountID: Must equal the authenticated business id',
            ],
          },
        ],
      });
      expect(await topology.count()).toBe(0);
    });

    it('leaves the file in the drop while the broker is down, and processes it once the broker is back', async () => {
      const { runner, dir } = pipelineIn({ retry: { initialDelayMs: 0 } });
      await f.put(`${dir}/later.csv`, ordersCsv('L'));
      proxy.cut({ refuse: true });
      try {
        const worker = runner();
        expect(await worker.runOnce()).toMatchObject({ retried: 1, accepted: 0 });
        expect(await f.has(`${dir}/later.csv`)).toBe(true);
      } finally {
        proxy.restore();
      }
      await vi.waitFor(async () => expect((await publisher.readiness()).ready).toBe(true), {
        timeout: 10_000,
        interval: 50,
      });
      expect(await runner().runOnce()).toMatchObject({ accepted: 1 });
      const receipt = await receiptAt(`${dir}/processed/later.csv.receipt.json`);
      expect(receipt.attempt).toBe(1);
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it('rejects a zero-byte file with a receipt saying why, and takes a name with spaces and unicode end to end', async () => {
      const { runner, dir } = pipelineIn();
      await f.put(`${dir}/empty.csv`, '');
      await f.put(`${dir}/Bestellung März 注文.csv`, ordersCsv('U'));
      expect(await runner().runOnce()).toMatchObject({ accepted: 1, rejected: 1, retried: 0 });
      const rejected = await receiptAt(`${dir}/failed/empty.csv.receipt.json`);
      expect(rejected).toMatchObject({
        outcome: 'rejected',
        file: { name: 'empty.csv', size: 0 },
        response: { status: 400, detail: expect.stringMatching(/\w/) },
      });
      const accepted = await receiptAt(`${dir}/processed/Bestellung März 注文.csv.receipt.json`);
      expect(accepted).toMatchObject({
        outcome: 'accepted',
        file: { name: 'Bestellung März 注文.csv' },
        response: { recordCount: 2 },
      });
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it('never overwrites an earlier receipt: a second try under the same name settles beside it', async () => {
      const { runner, dir } = pipelineIn();
      await f.put(`${dir}/same.csv`, 'not,a,legacy,file\n1,2,3,4\n');
      expect(await runner().runOnce()).toMatchObject({ rejected: 1 });
      const first = await receiptAt(`${dir}/failed/same.csv.receipt.json`);
      // The operator takes the failed input away (to fix it); its receipt stays. The fixed file fails again.
      await f.store.remove(`${dir}/failed/same.csv`);
      await f.put(`${dir}/same.csv`, 'still,not,a,legacy,file\n1,2,3,4,5\n');
      expect(await runner().runOnce()).toMatchObject({ rejected: 1 });
      expect(await receiptAt(`${dir}/failed/same.csv.receipt.json`)).toEqual(first);
      const names = (await f.store.list(`${dir}/failed`)).map((e) =>
        e.name.slice(`${dir}/failed/`.length),
      );
      const second = names.find((n) => /^\d{4}-.*-same\.csv\.receipt\.json$/.test(n));
      expect(second, names.join(', ')).toBeDefined();
      expect(names).toContain(second!.replace(/\.receipt\.json$/, ''));
      expect(await topology.count()).toBe(0);
    });

    it('backs off a file that failed for a transient reason, instead of trying it on every look', async () => {
      const { runner, dir } = pipelineIn({ retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 } });
      await f.put(`${dir}/backoff.csv`, ordersCsv('B'));
      const worker = runner();
      proxy.cut({ refuse: true });
      try {
        expect(await worker.runOnce()).toMatchObject({ retried: 1 });
      } finally {
        proxy.restore();
      }
      await vi.waitFor(async () => expect((await publisher.readiness()).ready).toBe(true), {
        timeout: 10_000,
        interval: 50,
      });
      expect(await worker.runOnce()).toMatchObject({ backingOff: 1, retried: 0, accepted: 0 });
      expect(await f.has(`${dir}/backoff.csv`)).toBe(true);
      expect(await topology.count()).toBe(0);
      // The back-off is in the input's state: a worker started later (or the next process) waits too.
      const statePath = `${dir}/.warehouse-ingest/state/${createHash('sha256').update(ordersCsv('B')).digest('hex')}.json`;
      const state = JSON.parse(
        (await readAll(await f.store.read(statePath))).toString('utf8'),
      ) as InputState;
      expect(state).toMatchObject({
        status: 'retry-scheduled',
        attempts: 0,
        deferrals: 1,
        failures: [{ kind: 'unavailable', attempt: 1 }],
      });
      expect(Date.parse(state.nextAttemptAt!) - Date.now()).toBeGreaterThan(20_000); // 60 s with jitter (at least half), minus the time taken since
      expect(await runner('w2').runOnce()).toMatchObject({
        backingOff: 1,
        retried: 0,
        accepted: 0,
      });
      expect(await f.has(`${dir}/backoff.csv`)).toBe(true);
      // Once the time has come (moved here instead of waiting a minute), any worker takes it.
      await f.put(
        statePath,
        JSON.stringify({ ...state, nextAttemptAt: new Date(Date.now() - 1).toISOString() }),
      );
      expect(await runner('w3').runOnce()).toMatchObject({ accepted: 1 });
      expect(await receiptAt(`${dir}/processed/backoff.csv.receipt.json`)).toMatchObject({
        attempt: 1,
      });
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it("keeps every input's state in the drop: published then receipted, with its receipt and where the file went", async () => {
      const { runner, dir, pipeline } = pipelineIn();
      const good = ordersCsv('S');
      const bad = 'not,a,legacy,file\n1,2,3,4\n';
      await f.put(`${dir}/good.csv`, good);
      await f.put(`${dir}/bad.csv`, bad);
      expect(await runner().runOnce()).toMatchObject({ accepted: 1, rejected: 1 });
      expect(await stateOf(dir, good)).toMatchObject({
        status: 'receipted',
        pipeline: pipeline.name,
        file: 'good.csv',
        location: 'processed/good.csv',
        attempts: 1,
        receipt: 'processed/good.csv.receipt.json',
        receipts: ['processed/good.csv.receipt.json'],
        response: { recordCount: 2 },
        worker: 'w1',
      });
      const failed = await stateOf(dir, bad);
      expect(failed).toMatchObject({
        status: 'failed',
        attempts: 1,
        location: 'failed/bad.csv',
        receipt: 'failed/bad.csv.receipt.json',
        failures: [{ attempt: 1, kind: 'rejected' }],
      });
      expect(failed.lastError).toMatch(/\w/);
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it('gives up on a file after retry.maxAttempts tries that could be its fault, with a receipt saying why', async () => {
      const { runner, dir } = pipelineIn({ retry: { maxAttempts: 2 } });
      const bad = 'not,a,legacy,file\n1,2,3,4\n';
      await f.put(`${dir}/poison.csv`, bad);
      expect(await runner().runOnce()).toMatchObject({ rejected: 1 });
      // Dropped again unchanged: the second rejection is the last try.
      await f.put(`${dir}/poison.csv`, bad);
      expect(await runner().runOnce()).toMatchObject({ rejected: 1 });
      expect(await stateOf(dir, bad)).toMatchObject({
        status: 'dead',
        attempts: 2,
        failures: [{ attempt: 1 }, { attempt: 2 }],
      });
      // A third drop is not tried at all: it is settled as dead at once.
      await f.put(`${dir}/poison.csv`, bad);
      expect(await runner().runOnce()).toMatchObject({ dead: 1, rejected: 0 });
      const receipts = (await f.store.list(`${dir}/failed`)).filter((e) =>
        e.name.endsWith('.receipt.json'),
      );
      expect(receipts).toHaveLength(3);
      const outcomes = await Promise.all(
        receipts.map(async (e) => (await receiptAt(e.name)).outcome),
      );
      expect([...outcomes].sort()).toEqual(['dead', 'rejected', 'rejected']);
      expect(await receiptAt(receipts[outcomes.indexOf('dead')]!.name)).toMatchObject({
        outcome: 'dead',
        attempt: 2,
        response: { status: 422, detail: expect.stringMatching(/^Gave up after 2 tries/) },
      });
      expect(await topology.count()).toBe(0);
    });

    it('counts a try that never finished (the worker crashed) and gives up on a file that keeps killing workers', async () => {
      const { runner, dir } = pipelineIn({ retry: { maxAttempts: 3 } });
      const csv = ordersCsv('K');
      const sha256 = createHash('sha256').update(csv).digest('hex');
      // What a worker killed in the middle of its third try leaves: the state it wrote before
      // publishing — here in the word of versions before the status was renamed (`validated`,
      // now `publishing`), which is still read as the same status.
      await f.put(
        `${dir}/.warehouse-ingest/state/${sha256}.json`,
        JSON.stringify({ sha256, status: 'validated', file: 'k.csv', attempts: 3 }),
      );
      await f.put(`${dir}/k.csv`, csv);
      expect(await runner().runOnce()).toMatchObject({ dead: 1, accepted: 0 });
      expect(await stateOf(dir, csv)).toMatchObject({
        status: 'dead',
        attempts: 3,
        location: 'failed/k.csv',
        failures: [{ attempt: 3, kind: 'unfinished' }],
      });
      expect(await receiptAt(`${dir}/failed/k.csv.receipt.json`)).toMatchObject({
        outcome: 'dead',
        response: { detail: expect.stringMatching(/did not finish/) },
      });
      // Below the limit the same leftover is simply tried again, the crash noted.
      const other = ordersCsv('K2');
      const otherSha = createHash('sha256').update(other).digest('hex');
      await f.put(
        `${dir}/.warehouse-ingest/state/${otherSha}.json`,
        JSON.stringify({ sha256: otherSha, status: 'received', file: 'k2.csv', attempts: 1 }),
      );
      await f.put(`${dir}/k2.csv`, other);
      expect(await runner().runOnce()).toMatchObject({ accepted: 1 });
      expect(await stateOf(dir, other)).toMatchObject({
        status: 'receipted',
        attempts: 2,
        failures: [{ attempt: 1, kind: 'unfinished' }],
      });
      expect(await receiptAt(`${dir}/processed/k2.csv.receipt.json`)).toMatchObject({ attempt: 2 });
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it('a settle cut short between the receipt and the move is carried out again: one receipt, not two', async () => {
      const { runner, dir } = pipelineIn({ retry: { initialDelayMs: 0, maxDelayMs: 0 } });
      await f.put(`${dir}/cut.csv`, ordersCsv('CUT'));
      await f.put(`${dir}/cut-bad.csv`, 'not,a,legacy,file\n9,9,9,9\n');
      // The first move into processed/ or failed/ fails, as if the worker died right after writing the receipt.
      const failing = new Set(['processed', 'failed']);
      const cutting = Object.create(f.store) as DropStore;
      cutting.rename = async (from, to) => {
        const folder = to.slice(dir.length + 1).split('/')[0]!;
        if (failing.delete(folder)) throw new Error('worker gone');
        return f.store.rename(from, to);
      };
      const first = await runner('w1', cutting).runOnce();
      expect(first).toMatchObject({ retried: 2, accepted: 0 });
      expect(await f.has(`${dir}/processed/cut.csv.receipt.json`)).toBe(true); // written before the move failed
      expect(await runner('w2').runOnce()).toMatchObject({ accepted: 1, rejected: 1 });
      const receipts = async (folder: string) =>
        (await f.store.list(`${dir}/${folder}`)).map((e) =>
          e.name.slice(`${dir}/${folder}/`.length),
        );
      expect((await receipts('processed')).sort()).toEqual(['cut.csv', 'cut.csv.receipt.json']);
      expect((await receipts('failed')).sort()).toEqual([
        'cut-bad.csv',
        'cut-bad.csv.receipt.json',
      ]);
      expect(await receiptAt(`${dir}/processed/cut.csv.receipt.json`)).toMatchObject({
        outcome: 'accepted',
        response: { recordCount: 2 },
      });
      expect(await stateOf(dir, ordersCsv('CUT'))).toMatchObject({
        status: 'receipted',
        location: 'processed/cut.csv',
        receipts: ['processed/cut.csv.receipt.json'],
      });
      expect((await stateOf(dir, ordersCsv('CUT'))).settling).toBeUndefined();
      expect(await topology.count()).toBe(2); // published once
      await topology.messages();
    });

    it('a move cut between its two halves (the file under both names) is finished: one receipt, one file', async () => {
      const { runner, dir } = pipelineIn({ retry: { initialDelayMs: 0, maxDelayMs: 0 } });
      await f.put(`${dir}/half.csv`, ordersCsv('HALF'));
      await f.put(`${dir}/half-bad.csv`, 'not,a,legacy,file\n8,8,8,8\n');
      // The first move into processed/ or failed/ makes the target and dies before the source is
      // gone: a kill between link(2) and unlink(2), or between S3's copy and delete.
      const cutting = new Set(['processed', 'failed']);
      const halfway = Object.create(f.store) as DropStore;
      halfway.rename = async (from, to, options) => {
        const folder = to.slice(dir.length + 1).split('/')[0]!;
        if (!cutting.delete(folder)) return f.store.rename(from, to, options);
        await f.store.write(to, await readAll(await f.store.read(from)));
        throw new Error('worker gone');
      };
      expect(await runner('w1', halfway).runOnce()).toMatchObject({ retried: 2, accepted: 0 });
      expect(await f.has(`${dir}/processed/half.csv`)).toBe(true); // and still claimed
      expect(await runner('w2').runOnce()).toMatchObject({ accepted: 1, rejected: 1 });
      const files = async (folder: string) =>
        (await f.store.list(`${dir}/${folder}`)).map((e) =>
          e.name.slice(`${dir}/${folder}/`.length),
        );
      expect((await files('processed')).sort()).toEqual(['half.csv', 'half.csv.receipt.json']);
      expect((await files('failed')).sort()).toEqual(['half-bad.csv', 'half-bad.csv.receipt.json']);
      expect(await f.store.list(`${dir}/.warehouse-ingest/claims`)).toEqual([]);
      expect(await stateOf(dir, ordersCsv('HALF'))).toMatchObject({
        status: 'receipted',
        location: 'processed/half.csv',
        receipts: ['processed/half.csv.receipt.json'],
      });
      expect(await topology.count()).toBe(2); // published once
      await topology.messages();
    });

    it('selects for reprocessing a try that was cut short away from the top level, once it is stale', async () => {
      const { runner, dir, pipeline } = pipelineIn({ claimLeaseMs: 10_000 });
      const csv = ordersCsv('STRAND');
      const sha256 = createHash('sha256').update(csv).digest('hex');
      // A worker reprocessing failed/x.csv (from where it lies, as on S3) died after its state said "received".
      await f.put(`${dir}/failed/x.csv`, csv);
      const stale = {
        sha256,
        status: 'received',
        file: 'x.csv',
        pipeline: pipeline.name,
        location: 'failed/x.csv',
        attempts: 2,
        updatedAt: new Date(Date.now() - 60_000).toISOString(),
      };
      await f.put(`${dir}/.warehouse-ingest/state/${sha256}.json`, JSON.stringify(stale));
      expect((await runner().reprocess()).inputs).toMatchObject([
        { file: 'x.csv', status: 'received', outcome: 'accepted', attempt: 3 },
      ]);
      expect(await f.has(`${dir}/processed/x.csv.receipt.json`)).toBe(true);
      expect(await stateOf(dir, csv)).toMatchObject({
        status: 'receipted',
        failures: [{ attempt: 2, kind: 'unfinished' }],
      });
      // One still within the lease may be in hand somewhere: not selected.
      await f.put(`${dir}/failed/y.csv`, ordersCsv('STRAND2'));
      const other = createHash('sha256').update(ordersCsv('STRAND2')).digest('hex');
      await f.put(
        `${dir}/.warehouse-ingest/state/${other}.json`,
        JSON.stringify({
          ...stale,
          sha256: other,
          file: 'y.csv',
          location: 'failed/y.csv',
          updatedAt: new Date().toISOString(),
        }),
      );
      expect((await runner().reprocess()).inputs).toEqual([]);
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });

    it('decides "already done" by content, never by a receipt\'s time: new bytes with an old mtime are taken, the same bytes are not', async () => {
      const { runner, dir } = pipelineIn({ after: { success: 'keep', failure: 'keep' } });
      const sha = (text: string) => createHash('sha256').update(text).digest('hex');
      const dayAgo = Date.now() - 86_400_000;
      await f.put(`${dir}/k.csv`, ordersCsv('K1'));
      expect(await runner().runOnce()).toMatchObject({ accepted: 1 });
      // A new upload under the same name keeps the mtime it had on the partner's side (cp -p, sftp -p, rsync -t).
      await f.put(`${dir}/k.csv`, ordersCsv('K2'));
      await f.setModified?.(`${dir}/k.csv`, dayAgo);
      expect(await runner().runOnce()).toMatchObject({ accepted: 1, alreadyDone: 0 });
      expect(await receiptAt(`${dir}/k.csv.receipt.json`)).toMatchObject({
        outcome: 'accepted',
        file: { sha256: sha(ordersCsv('K2')) },
      });
      // The same bytes uploaded again: already done (another worker, nothing in memory), nothing published.
      await f.put(`${dir}/k.csv`, ordersCsv('K2'));
      await f.setModified?.(`${dir}/k.csv`, dayAgo);
      expect(await runner('w2').runOnce()).toMatchObject({
        accepted: 0,
        duplicates: 0,
        alreadyDone: 1,
      });
      // A kept rejected file is not tried again on every look either.
      await f.put(`${dir}/bad.csv`, 'not,a,legacy,file\n1,2,3,4\n');
      expect(await runner().runOnce()).toMatchObject({ rejected: 1, alreadyDone: 1 });
      expect(await runner().runOnce()).toMatchObject({ rejected: 0, alreadyDone: 2 });
      // Move mode: a newer `<name>.receipt.json` lying in the top folder does not hide a new file.
      const moving = pipelineIn();
      await f.put(`${moving.dir}/m.csv`, ordersCsv('M1'));
      await f.setModified?.(`${moving.dir}/m.csv`, dayAgo);
      await f.put(`${moving.dir}/m.csv.receipt.json`, '{"outcome":"accepted"}');
      expect(await moving.runner().runOnce()).toMatchObject({ accepted: 1 });
      expect(await topology.count()).toBe(6);
      await topology.messages();
    }, 120_000); // seven looks, each of them hashing kept files over SFTP

    it('never leaves a file stuck for its name: too long to claim → failed/ with a receipt; refused by the store → reported once and listed by status', async () => {
      const { runner, dir, pipeline, store } = pipelineIn();
      const long = `${'o'.repeat(246)}.csv`; // 250 bytes: a valid file name, but no room for a claim or a receipt
      const refused = 'back\\slash.csv';
      // Only where names are file names (s3rver keeps keys as file names too, so it could not hold this one).
      if (traits.atomicRename) await f.put(`${dir}/${long}`, ordersCsv('LONG'));
      await f.put(`${dir}/${refused}`, ordersCsv('REFUSED'));
      const reports = () =>
        warnings.filter((line) => line.includes('cannot be used') && line.includes('slash')).length;
      const before = reports();
      const worker = runner();
      const first = await worker.runOnce();
      expect(await worker.runOnce()).toMatchObject({ unusableNames: 1, retried: 0, parked: 0 });
      expect(reports() - before, 'reported once, not on every look').toBe(1);
      expect(await f.has(`${dir}/${refused}`)).toBe(true);
      const status = await statusOf({ pipeline: { ...pipeline, file: 'p.yaml' }, store }, 10);
      expect(status.unusableNames).toEqual([
        { name: refused, reason: expect.stringMatching(/backslash/) },
      ]);
      if (!traits.atomicRename) {
        expect(first).toMatchObject({ unusableNames: 1, retried: 0 });
        return;
      }
      expect(first).toMatchObject({ accepted: 0, rejected: 1, unusableNames: 1, retried: 0 });
      expect(await f.has(`${dir}/${long}`)).toBe(false);
      const failed = (await f.store.list(`${dir}/failed`)).map((e) => e.name);
      const receipt = failed.find((name) => name.endsWith('.receipt.json'));
      expect(failed, failed.join(', ')).toHaveLength(2);
      expect(Buffer.byteLength(receipt!.split('/').at(-1)!)).toBeLessThan(200);
      expect(await receiptAt(receipt!)).toMatchObject({
        outcome: 'rejected',
        file: { name: long, sha256: createHash('sha256').update(ordersCsv('LONG')).digest('hex') },
        response: {
          type: '/problems/unusable-file-name',
          status: 422,
          detail: expect.stringMatching(/250 bytes/),
        },
      });
      expect(await topology.count()).toBe(0);
    });

    it('publishes the same bytes once: a second drop gets a duplicate receipt pointing at the first', async () => {
      const { runner, dir } = pipelineIn();
      const csv = ordersCsv('D');
      await f.put(`${dir}/d1.csv`, csv);
      expect(await runner().runOnce()).toMatchObject({ accepted: 1 });
      await f.put(`${dir}/d2.csv`, csv);
      expect(await runner().runOnce()).toMatchObject({ duplicates: 1, accepted: 0 });
      expect(await topology.count()).toBe(2);
      const receipt = await receiptAt(`${dir}/processed/d2.csv.receipt.json`);
      expect(receipt).toMatchObject({
        outcome: 'duplicate',
        duplicateOf: { file: 'd1.csv', receipt: 'processed/d1.csv.receipt.json' },
      });
      await topology.messages();
    });

    // Claims by rename exist where renames are atomic (local, SFTP). S3 has no rename: there one
    // worker at a time holds the drop's lease on the broker, so these cases are for the others.
    const withClaims = (title: string, test: () => Promise<void>) => {
      if (traits.atomicRename) it(title, test);
    };

    // Only stores that write through a temporary name and rename it (S3 PUTs appear whole).
    withClaims(
      'removes the temporary files of writes a killed worker never finished, and nothing else',
      async () => {
        const { runner, dir } = pipelineIn({ claimLeaseMs: 10_000 });
        const leftovers = [
          `.warehouse-ingest/state/${'c'.repeat(64)}.json.0badf00d.tmp`,
          'processed/x.csv.receipt.json.12345678.tmp',
          'failed/y.csv.abcdef01.tmp',
          'z.csv.receipt.json.9abcdef0.tmp',
        ];
        // Older than the lease (the shortest allowed): no write takes that long. The partner's
        // upload is as old, so only its name can keep it.
        const old = Date.now() - 10_100;
        for (const name of [...leftovers, 'partner-upload.csv.0badf00d.tmp']) {
          await f.put(`${dir}/${name}`, 'half-written');
          await f.setModified!(`${dir}/${name}`, old);
        }
        await f.put(`${dir}/processed/w.csv.receipt.json.fedcba98.tmp`, 'being written right now');
        await runner().runOnce();
        for (const name of leftovers) expect(await f.has(`${dir}/${name}`), name).toBe(false);
        expect(await f.has(`${dir}/partner-upload.csv.0badf00d.tmp`)).toBe(true);
        expect(await f.has(`${dir}/processed/w.csv.receipt.json.fedcba98.tmp`)).toBe(true);
      },
    );
    const withLease = (title: string, test: () => Promise<void>) => {
      if (!traits.atomicRename) it(title, test);
    };

    withLease(
      'lets two workers share a drop through the broker lease: one at a time, every file exactly once',
      async () => {
        const { runner, dir, pipeline } = pipelineIn();
        for (let i = 0; i < 6; i++) await f.put(`${dir}/w${i}.csv`, ordersCsv(`W${i}`));
        const worker = async (id: string) => {
          const lease = createRabbitMqLease({ url: AMQP_URL, pipeline: pipeline.name }, log);
          const running = runner(id, f.store, lease);
          try {
            return await running.runOnce({ waitForLeaseMs: 20_000 });
          } finally {
            await running.stop(); // hands the lease on to the other worker
          }
        };
        const [a, b] = await Promise.all([worker('worker-a'), worker('worker-b')]);
        expect(a.standby || b.standby).toBe(false); // the second got the lease once the first let go
        expect(a.accepted + b.accepted).toBe(6);
        expect(a.duplicates + b.duplicates).toBe(0);
        expect(await topology.count()).toBe(12);
        await topology.messages();
      },
    );

    withClaims(
      "recovers a crashed worker's claim after the lease, and processes the file once",
      async () => {
        const { runner, dir } = pipelineIn({ claimLeaseMs: 10_000 });
        await f.put(
          `${dir}/.warehouse-ingest/claims/${Date.now() - 60_000}~crashed~c.csv`,
          ordersCsv('C'),
        );
        await f.put(
          `${dir}/.warehouse-ingest/claims/${Date.now()}~alive~fresh.csv`,
          ordersCsv('F'),
        );
        expect(await runner().runOnce()).toMatchObject({ accepted: 1 });
        expect(await f.has(`${dir}/processed/c.csv`)).toBe(true);
        const claims = (await f.store.list(`${dir}/.warehouse-ingest/claims`)).map((e) =>
          e.name.split('~').slice(1).join('~'),
        );
        expect(claims).toEqual(['alive~fresh.csv']); // a live worker's claim is left alone
        expect(await topology.count()).toBe(2);
        await topology.messages();
      },
    );

    withClaims(
      'finishes a file whose worker crashed after the broker confirmed it, without publishing it again',
      async () => {
        const { runner, dir } = pipelineIn({ claimLeaseMs: 10_000 });
        const csv = ordersCsv('P');
        const sha256 = createHash('sha256').update(csv).digest('hex');
        const response = {
          success: true,
          recordCount: 2,
          messageIds: ['id-1', 'id-2'],
          correlationId: 'before-the-crash',
        };
        const { messageIds, ...summary } = response;
        // What a worker leaves behind once the broker confirmed: the ids, then the state that points at them.
        await f.put(`${dir}/.warehouse-ingest/state/${sha256}.ids`, `${messageIds.join('\n')}\n`);
        await f.put(
          `${dir}/.warehouse-ingest/state/${sha256}.json`,
          JSON.stringify({
            sha256,
            status: 'published',
            file: 'p.csv',
            attempts: 1,
            response: summary,
            processedAt: '2026-01-01T00:00:00.000Z',
          }),
        );
        await f.put(`${dir}/.warehouse-ingest/claims/${Date.now() - 60_000}~crashed~p.csv`, csv);
        expect(await runner().runOnce()).toMatchObject({ accepted: 1, duplicates: 0 });
        const receipt = await receiptAt(`${dir}/processed/p.csv.receipt.json`);
        expect(receipt).toMatchObject({ outcome: 'accepted', response, attempt: 2 });
        expect(await topology.count()).toBe(0);
      },
    );

    withClaims('lets two workers share a drop: every file is processed exactly once', async () => {
      const { runner, dir } = pipelineIn();
      for (let i = 0; i < 6; i++) await f.put(`${dir}/w${i}.csv`, ordersCsv(`W${i}`));
      const [a, b] = await Promise.all([
        runner('worker-a').runOnce(),
        runner('worker-b').runOnce(),
      ]);
      expect(a.accepted + b.accepted).toBe(6);
      expect(a.accepted + a.skipped).toBe(6);
      expect(await topology.count()).toBe(12);
      await topology.messages();
    });
  });
}

/** A view of a store limited to one sub-folder, so each test has its own drop. */
function scoped(store: DropStore, dir: string): DropStore {
  const at = (name: string) => `${dir}/${name}`;
  const strip = <T extends { name: string }>(entry: T): T => ({
    ...entry,
    name: entry.name.slice(dir.length + 1),
  });
  return {
    type: store.type,
    where: `${store.where}/${dir}`,
    atomicRename: store.atomicRename,
    list: async (folder) => (await store.list(folder ? at(folder) : dir)).map(strip),
    stat: async (name) => {
      const entry = await store.stat(at(name));
      return entry && strip(entry);
    },
    read: (name) => store.read(at(name)),
    rename: (from, to, options) => store.rename(at(from), at(to), options),
    write: (name, content) => store.write(at(name), content),
    remove: (name) => store.remove(at(name)),
    close: async () => {},
  };
}
