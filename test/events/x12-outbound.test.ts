import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import x12 from 'node-x12';
import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { fileDestination } from '../../src/events/destinations/file/index.js';
import { warehouseEvent } from '../../src/events/event.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { startEventsHarness, testEventsConfig } from '../support/events-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * An outbound folder with `format: x12`: a shipped event becomes a 945 in the partner's drop,
 * parsed back with node-x12 (a parser we did not write); control numbers are never reused; the
 * partner's 997s are matched and what stays unacknowledged is listed by the CLI.
 */
const temp = tempFolder('x12-outbound-');

function setUp() {
  const root = path.join(temp.dir, `drop-${readdirSync(temp.dir).length}`);
  mkdirSync(root, { recursive: true });
  // DEMO: the development configuration's tenant.
  const yaml = `name: acme-edi
businessId: DEMO
kind: sales-orders
format: x12
source: { type: local, path: ${root} }
events:
  path: edi/out
  format: x12
  x12:
    sender: { qualifier: ZZ, id: WAREBOXES }
    receiver: { qualifier: '01', id: '123456789', groupId: ACMEAPP }
    acknowledgments: edi/997
    acknowledgeWithinMs: 1000
`;
  const pipelines = path.join(root, '..', `pipelines-${path.basename(root)}`);
  mkdirSync(pipelines);
  writeFileSync(path.join(pipelines, 'acme.yaml'), yaml);
  const pipeline = pipelineSchema.parse({
    name: 'acme-edi',
    businessId: 'ACME',
    kind: 'sales-orders',
    format: 'x12',
    source: { type: 'local', path: root },
    events: {
      path: 'edi/out',
      format: 'x12',
      x12: {
        sender: { qualifier: 'ZZ', id: 'WAREBOXES' },
        receiver: { qualifier: '01', id: '123456789', groupId: 'ACMEAPP' },
        acknowledgments: 'edi/997',
        acknowledgeWithinMs: 1000,
      },
    },
  });
  const store = createLocalDrop({ path: root });
  const destination = fileDestination({ pipeline, store }, 10_000);
  if (!destination) throw new Error('no destination');
  const config = path.join(root, '..', `config-${path.basename(root)}.yaml`);
  writeFileSync(config, `dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${pipelines}\n`);
  const written = () => readdirSync(path.join(root, 'edi/out')).sort();
  const read = (name: string) => readFileSync(path.join(root, name), 'latin1');
  return { root, store, destination, config, written, read };
}

const shipped = (id: string, orderNumber: string) =>
  warehouseEvent({
    id,
    type: 'sales-order.shipped',
    businessId: 'ACME',
    occurredAt: new Date('2026-11-28T09:15:00Z'),
    data: {
      orderNumber,
      trackingNumber: '1Z999AA10123456784',
      carrier: 'UPSN',
      lines: [
        { sku: 'TEA-100', qty: 12 },
        { sku: 'MUG-200', qty: 1.5, unitOfMeasure: 'CS' },
      ],
    },
  });

describe('format: x12 outbound files', () => {
  it('writes sales-order.shipped as a 945 that parses back, and never reuses a control number', async () => {
    const { destination, written, read, store } = setUp();
    expect(destination.matches('sales-order.shipped')).toBe(true);
    expect(destination.matches('purchase-order.received')).toBe(true);
    expect(destination.matches('return-goods.received')).toBe(false);
    expect(await destination.attempt(shipped('evt-1', 'SO-1001'))).toMatchObject({
      outcome: 'delivered',
      file: 'written',
    });
    // The same event again is delivered by its name: no second file, no control number taken.
    expect(await destination.attempt(shipped('evt-1', 'SO-1001'))).toMatchObject({
      file: 'existing',
    });
    await destination.attempt(shipped('evt-2', 'SO-1002'));
    const files = written();
    expect(files).toHaveLength(2);
    expect(files[0]).toBe('20261128T091500Z-sales-order.shipped-evt-1.x12');
    const text = read(`edi/out/${files[0]}`);
    const interchange = new x12.X12Parser(true).parse(text) as x12.X12Interchange;
    expect(interchange.header.valueOf(6)?.trim()).toBe('WAREBOXES');
    expect(interchange.header.valueOf(7)).toBe('01');
    expect(interchange.header.valueOf(8)?.trim()).toBe('123456789');
    const group = interchange.functionalGroups[0]!;
    expect([group.header.valueOf(1), group.header.valueOf(3), group.header.valueOf(8)]).toEqual([
      'SW',
      'ACMEAPP',
      '004010',
    ]);
    const set = group.transactions[0]!;
    expect(set.header.valueOf(1)).toBe('945');
    expect(set.segments.map((s) => [s.tag, ...s.elements.map((e) => e.value)].join('*'))).toEqual([
      'W06*F*SO-1001*20261128*evt-1',
      'N9*CN*1Z999AA10123456784',
      'G62*11*20261128*8*0915',
      'W27*M*UPSN',
      'LX*1',
      'W12*CC*12*12*0*EA**SK*TEA-100',
      'LX*2',
      'W12*CC*1.5*1.5*0*CS**SK*MUG-200',
      'W03*13.5',
    ]);
    // Each interchange its own control number, in order, from the partner's ledger.
    const controls = files.map((f) => read(`edi/out/${f}`).slice(90, 99));
    expect(controls).toEqual(['000000001', '000000002']);
    await store.close();
  });

  it('writes purchase-order.received as a 944', async () => {
    const { destination, written, read, store } = setUp();
    await destination.attempt(
      warehouseEvent({
        id: 'evt-po',
        type: 'purchase-order.received',
        businessId: 'ACME',
        occurredAt: new Date('2026-11-28T10:00:00Z'),
        data: { orderNumber: 'PO-9', lines: [{ sku: 'A-1', qty: 40 }] },
      }),
    );
    const interchange = new x12.X12Parser(true).parse(
      read(`edi/out/${written()[0]}`),
    ) as x12.X12Interchange;
    const group = interchange.functionalGroups[0]!;
    expect(group.header.valueOf(1)).toBe('AR');
    const set = group.transactions[0]!;
    expect(set.header.valueOf(1)).toBe('944');
    expect(set.segments.map((s) => [s.tag, ...s.elements.map((e) => e.value)].join('*'))).toEqual([
      'W17*F*20261128*evt-po*PO-9',
      'G62*09*20261128*8*1000',
      'LX*1',
      'W07*40*EA**SK*A-1',
      'W14*40',
    ]);
    await store.close();
  });

  it("matches the partner's 997s to what was sent and lists the rest as unacknowledged (CLI)", async () => {
    const { destination, written, read, config, root, store } = setUp();
    await destination.attempt(shipped('evt-a', 'SO-1'));
    await destination.attempt(shipped('evt-b', 'SO-2'));
    const [first] = written();
    const control = read(`edi/out/${first}`).slice(90, 99);
    // The partner's 997 for the first: its ISA06 is the partner, AK1 our GS06.
    const isa = `ISA*00*          *00*          *01*${'123456789'.padEnd(15)}*ZZ*${'WAREBOXES'.padEnd(15)}*261128*1000*U*00401*000000777*0*P*>~`;
    const ack = `${isa}\nGS*FA*ACMEAPP*WAREBOXES*20261128*1000*777*X*004010~\nST*997*0001~\nAK1*SW*${Number(control)}~\nAK2*945*0001~\nAK5*A~\nAK9*A*1*1*1~\nSE*6*0001~\nGE*1*777~\nIEA*1*000000777~\n`;
    mkdirSync(path.join(root, 'edi/997'), { recursive: true });
    writeFileSync(path.join(root, 'edi/997/ack-1.x12'), ack);
    await store.close();
    // acknowledgeWithinMs is 1 s: the second is overdue once a second has passed since it was written.
    const sentAt = Date.now();
    await expect.poll(() => Date.now() - sentAt).toBeGreaterThanOrEqual(1000);
    const run = () =>
      runCli(['events', 'x12-unacknowledged', '--json'], { env: { INGEST_CONFIG: config } });
    const { code, stdout, stderr } = await run();
    expect(stderr).toBe('');
    expect(code).toBe(1);
    const [report] = JSON.parse(stdout) as Array<{
      pipeline: string;
      unacknowledged: Array<{ control: string; set: string }>;
      unmatched: string[];
    }>;
    expect(report).toMatchObject({
      pipeline: 'acme-edi',
      unacknowledged: [{ control: '000000002', set: '945' }],
      unmatched: [],
    });
    // The match is kept in the ledger: a second look finds the same, reading nothing new.
    const again = JSON.parse((await run()).stdout) as Array<{
      matched: number;
      unacknowledged: unknown[];
    }>;
    expect(again[0]).toMatchObject({ matched: 0, unacknowledged: [{ control: '000000002' }] });
  });

  it('writes a 945 for a sales-order.shipped emitted on the real broker, through the events consumer', async () => {
    const { root, store } = setUp();
    const pipeline = pipelineSchema.parse({
      name: 'acme-edi',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'x12',
      source: { type: 'local', path: root },
      events: {
        path: 'edi/out',
        format: 'x12',
        x12: {
          sender: { qualifier: 'ZZ', id: 'WAREBOXES' },
          receiver: { qualifier: 'ZZ', id: 'ACME' },
        },
      },
    });
    const events = testEventsConfig();
    const harness = await startEventsHarness({
      events,
      env: {},
      tenants: [{ businessId: 'DEMO', webhooks: [] }],
      drops: [{ pipeline, store }],
    });
    try {
      await emitEvent({
        url: AMQP_URL,
        events,
        businessId: 'DEMO',
        type: 'sales-order.shipped',
        data: { orderNumber: 'SO-77', lines: [{ sku: 'A-1', qty: 2 }] },
        id: 'evt-broker-1',
      });
      const folder = path.join(root, 'edi/out');
      const listed = () => {
        try {
          return readdirSync(folder);
        } catch {
          return [];
        }
      };
      await expect.poll(listed, { timeout: 15_000 }).toHaveLength(1);
      const text = readFileSync(path.join(folder, listed()[0]!), 'latin1');
      const set = (new x12.X12Parser(true).parse(text) as x12.X12Interchange).functionalGroups[0]!
        .transactions[0]!;
      expect(set.header.valueOf(1)).toBe('945');
      expect(set.segments[0]?.valueOf(2)).toBe('SO-77');
      expect(await harness.deadCount()).toBe(0);
    } finally {
      await harness.close();
      await store.close();
    }
  });
});
