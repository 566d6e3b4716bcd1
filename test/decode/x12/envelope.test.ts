import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acknowledgmentSets } from '../../../src/decode/x12/acknowledge.js';
import { readInterchange } from '../../../src/decode/x12/envelope.js';
import { writeInterchange } from '../../../src/decode/x12/write.js';

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/x12/${name}`, import.meta.url), 'latin1');

describe('the X12 envelope', () => {
  it('takes its separators from the ISA: element at 4, component at 105, terminator at 106', () => {
    expect(readInterchange(fixture('940-004010-tilde.x12')).interchange?.separators).toEqual({
      element: '*',
      component: '>',
      segment: '~',
    });
    expect(readInterchange(fixture('940-005010-pipe.x12')).interchange?.separators).toEqual({
      element: '|',
      component: '^',
      segment: '\n',
    });
    const sample = readInterchange(fixture('940-004010-newline.x12'));
    expect(sample.findings).toEqual([]);
    expect(sample.interchange).toMatchObject({ control: '000003438', version: '00401' });
  });

  it('keeps control numbers as sent (leading zeros) and positions segments from ST', () => {
    const { interchange } = readInterchange(fixture('940-004010-tilde.x12'));
    expect(interchange?.control).toBe('000000001');
    const set = interchange?.groups[0]?.sets[0];
    expect(set?.control).toBe('0001');
    expect(set?.segments.map((s) => `${s.position}:${s.id}`).slice(0, 3)).toEqual([
      '2:W05',
      '3:N9',
      '4:G62',
    ]);
  });

  it('reports a missing SE, a missing GE and a missing IEA, never throwing', () => {
    const text = fixture('940-004010-tilde.x12');
    const cut = text.slice(0, text.indexOf('SE*15*0001'));
    const { findings } = readInterchange(cut);
    expect(findings.map((f) => f.message)).toEqual([
      'Transaction set 0001: no SE before the end of the file.',
      'Group 1: expected ST or GE, but the file ends.',
      'Expected GS or IEA after the groups, but the file ends.',
    ]);
  });

  it('refuses what has no ISA to read separators from', () => {
    expect(readInterchange('GS*OW*A*B~').findings).toEqual([
      { scope: 'interchange', message: 'The file does not start with an ISA segment.' },
    ]);
    expect(readInterchange(`ISA*00*${' '.repeat(8)}*00~`).findings[0]?.message).toMatch(
      /cut short/,
    );
  });
});

describe('the 997 of a 005010 interchange', () => {
  it('points at the segment and element with IK3/IK4 and keeps AK5/AK9', () => {
    const { interchange, findings } = readInterchange(fixture('940-005010-pipe.x12'));
    if (!interchange) throw new Error('fixture unreadable');
    const sets = acknowledgmentSets({
      interchange,
      findings,
      accepted: false,
      errors: [
        {
          index: 1,
          errors: [
            'transaction set 0002, segment 5 (G62), element 02: "20261340" is not a calendar date',
            'transaction set 0002: financial: Required (no 940 segment maps to it)',
          ],
        },
      ],
    });
    expect(sets).toEqual([
      {
        id: '997',
        segments: [
          ['AK1', 'OW', '7', '005010'],
          ['AK2', '940', '0001'],
          ['AK5', 'R'],
          ['AK2', '940', '0002'],
          ['IK3', 'G62', '5', '', '8'],
          ['IK4', '2', '', '8'],
          ['AK5', 'R', '5'],
          ['AK9', 'R', '2', '2', '0'],
        ],
      },
    ]);
  });

  it('accepts with errors (E) a set that carries a segment its layout does not have', () => {
    const text = fixture('940-004010-tilde.x12').replace('N9*RU*Y~', 'ZZZ*A~');
    const { interchange, findings } = readInterchange(text);
    if (!interchange) throw new Error('fixture unreadable');
    const [ack] = acknowledgmentSets({
      interchange,
      findings,
      accepted: true,
      errors: [],
      known: { '940': new Set(['W05', 'G62', 'N1', 'N3', 'N4', 'PER', 'W66', 'LX', 'W01']) },
    });
    expect(ack?.segments).toContainEqual(['AK3', 'ZZZ', '3', '', '2']);
    expect(ack?.segments.at(-1)).toEqual(['AK9', 'E', '2', '2', '2']);
  });

  it('writes an interchange whose counts and control numbers agree', () => {
    const text = writeInterchange(
      {
        sender: { qualifier: 'ZZ', id: 'WAREBOXES' },
        receiver: { qualifier: 'ZZ', id: 'SENDER' },
        version: '004010',
        usage: 'T',
        control: '000000042',
        functionalId: 'FA',
        at: new Date('2026-11-28T05:00:00Z'),
      },
      [
        {
          id: '997',
          segments: [
            ['AK1', 'OW', '1'],
            ['AK9', 'A', '1', '1', '1'],
          ],
        },
      ],
    );
    const { findings, interchange } = readInterchange(text);
    expect(findings).toEqual([]);
    expect(text.split('\n')[0]).toHaveLength(106);
    expect(interchange).toMatchObject({ control: '000000042', usage: 'T' });
    expect(text).toContain('\nSE*4*0001~\nGE*1*42~\nIEA*1*000000042~\n');
  });
});

describe('a 943 read as a purchase order', () => {
  it('maps W06, N1*SF, G62*17 and each W04 into a valid v2 purchase order with the profile', async () => {
    const { decodeX12 } = await import('../../../src/decode/x12/index.js');
    const { validateRecord } = await import('../../../src/records/validate.js');
    const { KINDS } = await import('../../../src/records/index.js');
    const decoded = await decodeX12(
      new URL('../../../fixtures/x12/943-004010.x12', import.meta.url).pathname,
      {
        kind: 'purchase-orders',
        businessId: 'DEMO',
        maxBytes: 1_000_000,
        defaults: {
          'order.class': 'STANDARD',
          'location.site': 'UK01',
          'location.warehouse': 'WH-MAN',
          'location.ownerId': 'DEMO',
          'location.receiptLane': 'DOCK-3',
        },
      },
    );
    const records = [];
    for await (const candidate of decoded.open()) records.push(candidate.record);
    expect(records).toHaveLength(1);
    const result = validateRecord(KINDS['purchase-orders'], records[0], 'DEMO');
    expect(result.ok).toBe(true);
    expect(records[0]).toMatchObject({
      identifiers: { id: 'TR-2026-0311', businessId: 'DEMO', purchaseOrder: 'P0311' },
      supplier: { id: 'SUP-TEAWORKS', name: 'Teaworks Ltd', reference: 'SHP-88121' },
      dates: { dueIn: '2026-09-03T06:00:00Z' },
      lines: [
        {
          identifiers: { purchaseOrderId: 'TR-2026-0311' },
          product: { skuId: 'SKU-TEA-100', unitOfMeasure: 'CS' },
          quantities: { advised: 120, ordered: 120 },
        },
        { product: { skuId: 'SKU-MUG-200', unitOfMeasure: 'EA' }, quantities: { advised: 480 } },
      ],
    });
  });

  it('refuses a 940 in a purchase-orders pipeline, naming the set', async () => {
    const { decodeX12 } = await import('../../../src/decode/x12/index.js');
    await expect(
      decodeX12(new URL('../../../fixtures/x12/940-004010-tilde.x12', import.meta.url).pathname, {
        kind: 'purchase-orders',
        businessId: 'DEMO',
        maxBytes: 1_000_000,
      }),
    ).rejects.toThrow(
      'Transaction set 0001: ST01 is 940, not supported here; this pipeline reads 943 (purchase-orders).',
    );
  });
});
