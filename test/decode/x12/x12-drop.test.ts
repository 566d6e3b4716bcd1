import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import x12 from 'node-x12';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KINDS } from '../../../src/records/index.js';
import type { SalesOrder } from '../../../src/records/sales-orders.js';
import { validateRecord } from '../../../src/records/validate.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../../support/broker.js';
import { runCli } from '../../support/cli-process.js';
import { tempFolder } from '../../support/temp.js';

/**
 * An X12 940 dropped in a local folder becomes v2 sales orders on the broker through
 * configuration only (a pipeline file, an onboarding profile, `run --once` as cron runs it),
 * with its receipt and its 997 beside it; a broken one is refused whole, in the partner's terms.
 * The 997s are read back with node-x12: a parser we did not write.
 */
const FIXTURES = new URL('../../../fixtures/x12/', import.meta.url).pathname;

/** What DEMO's onboarding profile gives a 940's orders that a 940 does not carry. */
const PROFILE = `onboarding:
  DEMO:
    sales-orders:
      identifiers.customerId: CUST-X12
      identifiers.site: UK01
      identifiers.warehouse: WH-MAN
      identifiers.ownerId: DEMO
      order.class: B2B
      order.customerRef: EDI
      customer.name: Demo EDI Customer
      shipping.method: STANDARD
      shipping.route: NW-03
      shipping.carrier: DPD
      shipping.shippingLane: LANE-2
      financial.currency: GBP
      financial.lineValue: 0
      shipAddresses[].table: SHIPTO
      shipContacts[].table: CONTACT
      shipmentLines[].financial.price: 0
`;

let topology: TestTopology;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});
afterAll(() => topology.cleanup());

function setUp(files: Record<string, string>) {
  const temp = tempFolder('x12-drop-');
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  for (const [name, fixture] of Object.entries(files))
    copyFileSync(path.join(FIXTURES, fixture), path.join(drop, name));
  const pipeline = temp.write(
    'edi.yaml',
    `name: edi-940\nbusinessId: DEMO\nkind: sales-orders\nformat: x12\nsource: { type: local, path: ${drop} }\nreadiness: { strategy: rename }\n`,
  );
  const config = temp.write(
    'config.yaml',
    `dataDirectory: ${temp.dir}/data\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\n${PROFILE}`,
  );
  const run = () =>
    runCli(['run', pipeline, '--once'], { env: { INGEST_CONFIG: config, AMQP_URL } });
  const read = (name: string) => readFileSync(path.join(drop, name), 'latin1');
  const receipt = (name: string) =>
    JSON.parse(read(name)) as {
      outcome: string;
      response: { detail?: string; errors?: Array<{ index: number; errors: string[] }> };
    };
  return { drop, run, read, receipt };
}

/** The 997 parsed by node-x12 (strict: counts and control numbers checked), as segment lines. */
function parse997(text: string): string[] {
  const interchange = new x12.X12Parser(true).parse(text) as x12.X12Interchange;
  const group = interchange.functionalGroups[0]!;
  expect(group.header.valueOf(1)).toBe('FA');
  return group.transactions.flatMap((t) =>
    t.segments.map((s) => [s.tag, ...s.elements.map((e) => e.value)].join('*')),
  );
}

describe('format: x12 in a local drop', () => {
  it('publishes a 940 interchange (004010, * > ~) as valid v2 sales orders, with its receipt and a 997 AK9*A beside it', async () => {
    const { run, receipt, read, drop } = setUp({ 'orders-1.x12': '940-004010-tilde.x12' });
    const { code, stdout, stderr } = await run();
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({ accepted: 1, rejected: 0 });
    const messages = await topology.messages();
    const orders = messages.map((m) => m.content as SalesOrder);
    expect(orders.map((o) => o.identifiers.shipmentId).sort()).toEqual(['SO-1001', 'SO-1002']);
    for (const order of orders)
      expect(validateRecord(KINDS['sales-orders'], order, 'DEMO').ok).toBe(true);
    const first = orders.find((o) => o.identifiers.shipmentId === 'SO-1001')!;
    expect(first).toMatchObject({
      identifiers: { businessId: 'DEMO', customerId: 'RT-01', site: 'UK01' },
      customer: { order: 'PO-77120', name: 'Receiving Team' },
      shipping: { carrier: 'UPSN' },
      dates: { dueOut: '2026-08-13T17:30:00Z', shipment: '2026-08-15T09:00:00Z' },
      shipAddresses: [
        {
          table: 'SHIPTO',
          address: { line1: '125 Shipping Lane', city: 'Reno', postcode: '89502', country: 'US' },
        },
      ],
      shipContacts: [
        {
          personal: { firstName: 'Ria', lastName: 'Tanaka' },
          contact: { phone: '7755550100', email: 'receiving@example.test' },
        },
      ],
      shipmentLines: [
        {
          line: '1',
          skuId: 'CLIENT-CASE',
          quantities: { ordered: 4 },
          product: { unitOfMeasure: 'CS' },
        },
        {
          line: '2',
          skuId: 'TEA-100',
          quantities: { ordered: 12 },
          product: { unitOfMeasure: 'EA' },
        },
      ],
    });
    expect(receipt('processed/orders-1.x12.receipt.json')).toMatchObject({
      outcome: 'accepted',
      format: 'x12',
      response: { recordCount: 2 },
    });
    const ack = read('processed/orders-1.x12.997');
    expect(
      ack.startsWith('ISA*00*          *00*          *ZZ*WAREBOXES      *ZZ*SENDER         *'),
    ).toBe(true);
    expect(parse997(ack)).toEqual([
      'AK1*OW*1',
      'AK2*940*0001',
      'AK5*A',
      'AK2*940*0002',
      'AK5*A',
      'AK9*A*2*2*2',
    ]);
    expect(readdirSync(drop)).not.toContain('orders-1.x12');
  });

  it('reads 005010 with | and ^ separators and newline terminators, and the public 004010 sample with newline terminators', async () => {
    const { run, receipt, read } = setUp({
      'five.edi': '940-005010-pipe.x12',
      'sample.edi': '940-004010-newline.x12',
    });
    const { code, stderr } = await run();
    expect(code, stderr).toBe(0);
    const ids = (await topology.messages()).map(
      (m) => (m.content as SalesOrder).identifiers.shipmentId,
    );
    expect(ids.sort()).toEqual(['SO-5001', 'SO-5002']);
    expect(receipt('processed/five.edi.receipt.json').outcome).toBe('accepted');
    const five = read('processed/five.edi.997');
    // Our answer keeps the partner's separators and version: 00501, | elements, ^ components.
    expect(five.slice(0, 4)).toBe('ISA|');
    expect(five.charAt(104)).toBe('^');
    expect(parse997(five)).toEqual(
      ['AK1|OW|7|005010', 'AK2|940|0001', 'AK5|A', 'AK2|940|0002', 'AK5|A', 'AK9|A|2|2|2'].map(
        (s) => s.replaceAll('|', '*'),
      ),
    );
    // The public sample is read (newline terminators), and refused: it has no G62, so no dates.
    const sample = receipt('failed/sample.edi.receipt.json');
    expect(sample.response.errors?.[0]?.errors).toContain(
      'transaction set 0001, segment 2 (G62): dates: Required (segment G62*10 missing)',
    );
    expect(parse997(read('failed/sample.edi.997'))).toEqual([
      'AK1*OW*3317',
      'AK2*940*0001',
      'AK3*G62*2**3',
      'AK5*R*5',
      'AK9*R*1*1*0',
    ]);
  });

  it('refuses a 940 with a bad quantity whole: a receipt in partner terms and a 997 AK5*R with AK3/AK4 at the segment and element', async () => {
    const { run, receipt, read, drop } = setUp({ 'bad.x12': 'invalid/940-quantity.x12' });
    // And a file that is no interchange at all: refused, and no 997 (no ISA says whom to answer).
    writeFileSync(path.join(drop, 'junk.x12'), Buffer.from([0x00, 0xff, 0x49, 0x53, 0x41, 0x2a]));
    const { code, stdout } = await run();
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({ accepted: 0, rejected: 2 });
    expect(receipt('failed/junk.x12.receipt.json').response.detail).toBe(
      'The X12 interchange is refused whole: The file does not start with an ISA segment.',
    );
    expect(readdirSync(path.join(drop, 'failed')).sort()).toEqual([
      'bad.x12',
      'bad.x12.997',
      'bad.x12.receipt.json',
      'junk.x12',
      'junk.x12.receipt.json',
    ]);
    expect(await topology.count()).toBe(0);
    const refused = receipt('failed/bad.x12.receipt.json');
    expect(refused.outcome).toBe('rejected');
    expect(refused.response.errors).toEqual([
      {
        index: 0,
        errors: [
          'transaction set 0001, segment 14 (W01), element 01: Expected a number, received "TWELVE"',
          'transaction set 0001, segment 14 (W01): shipmentLines[1].quantities: Required',
        ],
      },
    ]);
    expect(parse997(read('failed/bad.x12.997'))).toEqual([
      'AK1*OW*1',
      'AK2*940*0001',
      'AK3*W01*14**8',
      'AK4*1**6',
      'AK5*R*5',
      'AK2*940*0002',
      'AK5*R',
      'AK9*R*2*2*0',
    ]);
  });

  it('refuses an envelope whose counts and control numbers disagree, naming them, with AK5/AK9 codes', async () => {
    const { run, receipt, read } = setUp({ 'counts.x12': 'invalid/940-counts.x12' });
    expect((await run()).code).toBe(0);
    expect(await topology.count()).toBe(0);
    const refused = receipt('failed/counts.x12.receipt.json');
    expect(refused.response.detail).toBe(
      'The X12 interchange 000000002 from ZZ:SENDER is refused whole: Transaction set 0001: SE01 says 14 segments; the set has 15 (ST and SE included). Group 1: GE02 (9) is not GS06.',
    );
    // node-x12 refuses our input too (GE02), so the 997 is read as text.
    const ack = read('failed/counts.x12.997');
    expect(ack).toContain('\nAK2*940*0001~\nAK5*R*4~\n');
    expect(ack).toContain('\nAK9*R*2*2*0*4~\n');
  });

  it("reports a sender's interchange control number seen before as a duplicate, and never reuses its own", async () => {
    const { run, receipt, read, drop } = setUp({ 'first.x12': '940-004010-tilde.x12' });
    expect((await run()).code).toBe(0);
    await topology.messages();
    // Same sender and ISA13, other content (another order number): a duplicate interchange.
    const again = read('processed/first.x12').replaceAll('SO-100', 'SO-200');
    writeFileSync(path.join(drop, 'again.x12'), again);
    expect((await run()).code).toBe(0);
    expect(await topology.count()).toBe(0);
    expect(receipt('failed/again.x12.receipt.json').response.detail).toMatch(
      /^Duplicate interchange: control number 000000001 from sender ZZ:SENDER was accepted before \(first\.x12, /,
    );
    const control = (name: string) => read(name).slice(90, 99);
    expect(control('processed/first.x12.997')).toBe('000000001');
    expect(control('failed/again.x12.997')).toBe('000000002');
    expect(parse997(read('failed/again.x12.997')).at(-1)).toBe('AK9*R*2*2*0');
  });
});
