/**
 * The pieces of the legacy (v1) conversion the golden fixtures only reach indirectly: legacy
 * dates, profile defaults, profile checking at start-up, and the way back from a v2 path to
 * the partner's field.
 */
import { describe, expect, it } from 'vitest';
import { KINDS } from '../../src/records/index.js';
import { legacyDateToUtc } from '../../src/records/legacy/dates.js';
import { applyDefaults } from '../../src/records/legacy/mapping.js';
import { profileEntryProblems } from '../../src/records/legacy/onboarding.js';
import { purchaseOrdersV1 } from '../../src/records/legacy/purchase-orders.js';
import { salesOrdersV1 } from '../../src/records/legacy/sales-orders.js';
import { workOrdersV1 } from '../../src/records/legacy/work-orders.js';

describe('legacyDateToUtc', () => {
  it.each([
    // A date is midnight UTC.
    ['2026-02-03', '2026-02-03T00:00:00Z'],
    ['2028-02-29', '2028-02-29T00:00:00Z'],
    // No zone: taken as UTC, with T or a space, minutes, seconds and a fraction optional.
    ['2026-02-03T14:30', '2026-02-03T14:30:00Z'],
    ['2026-02-03T14:30:05', '2026-02-03T14:30:05Z'],
    ['2026-02-03T14:30:05.123', '2026-02-03T14:30:05.123Z'],
    ['2026-02-03 14:30', '2026-02-03T14:30:00Z'],
    ['2026-02-03 14:30:05', '2026-02-03T14:30:05Z'],
    ['2026-02-03 14:30:05.123', '2026-02-03T14:30:05.123Z'],
    // A fraction is kept to the millisecond.
    ['2026-02-03T14:30:05.1', '2026-02-03T14:30:05.100Z'],
    ['2026-02-03T14:30:05.123456789', '2026-02-03T14:30:05.123Z'],
    // UTC: unchanged.
    ['2026-02-03T14:30:05Z', '2026-02-03T14:30:05Z'],
    ['2026-02-03T14:30:05.123Z', '2026-02-03T14:30:05.123Z'],
    // An offset: converted to UTC, across midnight too.
    ['2026-02-03T14:30:05+01:00', '2026-02-03T13:30:05Z'],
    ['2026-02-03T14:30:05.123+01:00', '2026-02-03T13:30:05.123Z'],
    ['2026-02-03T14:30:05-05:30', '2026-02-03T20:00:05Z'],
    ['2026-02-03T00:30:00+0100', '2026-02-02T23:30:00Z'],
    ['2026-02-03T12:00:00+14:00', '2026-02-02T22:00:00Z'],
  ])('%s → %s', (text, utc) => {
    expect(legacyDateToUtc(text)).toBe(utc);
  });

  it.each([
    ['day-first or month-first', '03/02/2026'],
    ['a day the month does not have', '2026-02-30'],
    ['29 February outside a leap year', '2026-02-29'],
    ['month 13', '2026-13-01'],
    ['month 0', '2026-00-10'],
    ['hour 24', '2026-02-03T24:00'],
    ['minute 60', '2026-02-03T14:60'],
    ['an offset beyond ±14:00', '2026-02-03T14:30:00+15:00'],
    ['an offset beyond ±14:00 (west)', '2026-02-03T14:30:00-14:30'],
    ['an offset of one digit', '2026-02-03T14:30:00+1'],
    ['an offset on a bare date', '2026-02-03+01:00'],
    ['single-digit month and day', '2026-2-3'],
    ['a time without minutes', '2026-02-03T14'],
    ['an empty text', ''],
  ])('refuses %s: %j', (_what, text) => {
    expect(legacyDateToUtc(text)).toBeUndefined();
  });
});

describe('applyDefaults', () => {
  it('fills what the record lacks; what the partner sent wins', () => {
    const record = { order: { class: 'SENT' }, identifiers: { id: 'PO-1' } };
    applyDefaults(record, {
      'order.class': 'PROFILE',
      'location.site': 'UK01',
      'identifiers.businessId': 'ACME',
    });
    expect(record).toEqual({
      order: { class: 'SENT' },
      identifiers: { id: 'PO-1', businessId: 'ACME' },
      location: { site: 'UK01' },
    });
  });

  it('a `[]` path fills every item that lacks the field, and nothing when there are no items', () => {
    const record = {
      lines: [
        { product: { skuId: 'A' } },
        { product: { skuId: 'B', unitOfMeasure: 'CS' } },
        'not an item',
      ],
    };
    applyDefaults(record, { 'lines[].product.unitOfMeasure': 'EA' });
    expect(record.lines).toEqual([
      { product: { skuId: 'A', unitOfMeasure: 'EA' } },
      { product: { skuId: 'B', unitOfMeasure: 'CS' } },
      'not an item',
    ]);

    const empty: Record<string, unknown> = {};
    applyDefaults(empty, { 'lines[].product.unitOfMeasure': 'EA' });
    expect(empty).toEqual({});
  });

  it('with overwrite, sets the values outright (the order’s own id on profile-supplied items)', () => {
    const record = {
      shipAddresses: [{ shipmentId: '', addressId: 'A1' }],
      dates: { dueIn: 'old' },
    };
    applyDefaults(record, { 'shipAddresses[].shipmentId': 'SO-1', 'dates.dueIn': 'new' }, true);
    expect(record).toEqual({
      shipAddresses: [{ shipmentId: 'SO-1', addressId: 'A1' }],
      dates: { dueIn: 'new' },
    });
  });

  it('copies profile values, so one record cannot change the next one’s', () => {
    const profile = { shipAddresses: [{ table: 'SHIPTO', shipmentId: '' }] };
    const first: Record<string, unknown> = {};
    applyDefaults(first, profile);
    (first.shipAddresses as Array<Record<string, unknown>>)[0]!.shipmentId = 'SO-1';
    expect(profile.shipAddresses[0]!.shipmentId).toBe('');
  });
});

describe('profileEntryProblems', () => {
  it('accepts a known path with a value of the right type, `lines[]` paths included', () => {
    expect(profileEntryProblems(KINDS['purchase-orders'], 'supplier.id', 'SUP-1')).toEqual([]);
    expect(
      profileEntryProblems(KINDS['purchase-orders'], 'lines[].product.unitOfMeasure', 'EA'),
    ).toEqual([]);
    expect(
      profileEntryProblems(KINDS['master-data'], 'product.information.countryOfOrigin', 'GB'),
    ).toEqual([]);
  });

  it('refuses a path the kind does not have', () => {
    expect(profileEntryProblems(KINDS['purchase-orders'], 'supplier.colour', 'red')).toEqual([
      'Unknown purchase order field "supplier.colour"',
    ]);
    expect(profileEntryProblems(KINDS['purchase-orders'], 'lines[].nope', 'x')).toEqual([
      'Unknown purchase order field "lines[].nope"',
    ]);
    // `[]` only steps into arrays, and the path must be well formed.
    expect(profileEntryProblems(KINDS['purchase-orders'], 'supplier[].id', 'x')).toEqual([
      'Unknown purchase order field "supplier[].id"',
    ]);
    expect(profileEntryProblems(KINDS['purchase-orders'], 'supplier..id', 'x')).toEqual([
      'Unknown purchase order field "supplier..id"',
    ]);
  });

  it('refuses a value of the wrong type, naming the field', () => {
    expect(profileEntryProblems(KINDS['purchase-orders'], 'location.warehouse', 7)).toEqual([
      'location.warehouse: Expected string, received number',
    ]);
    expect(
      profileEntryProblems(KINDS['purchase-orders'], 'lines[].product.unitOfMeasure', 3),
    ).toEqual(['lines[0].product.unitOfMeasure: Expected string, received number']);
    expect(profileEntryProblems(KINDS['work-orders'], 'location', 'WH-MAN')).toEqual([
      'location: Expected object, received string',
    ]);
  });
});

describe('sourceOf: from a failing v2 path back to the field the partner sent', () => {
  it('names the absent legacy field when a whole v2 object is missing', () => {
    const order = {
      AccountID: 'ACME',
      OrdNumber: 'SO-1',
      oOrderLines: [{ LineNumber: 1 }, { LineNumber: 2, Qty: 1 }],
    };
    // No DueOutDate: v2 reports `dates: Required`, not `dates.dueOut`.
    expect(salesOrdersV1.sourceOf('dates', order)).toBe('DueOutDate');
    expect(salesOrdersV1.sourceOf('shipmentLines[0].quantities', order)).toBe('oOrderLines[0].Qty');
    expect(salesOrdersV1.sourceOf('shipmentLines[1].financial', order)).toBe(
      'oOrderLines[1].SalesUnitPrice',
    );
    // Of the fields that fill the object, the one not sent: here the order's own number (fromHeader).
    expect(
      purchaseOrdersV1.sourceOf('lines[0].identifiers', { iOrderLines: [{ LineNumber: 1 }] }),
    ).toBe('OrdNumber');
    expect(
      purchaseOrdersV1.sourceOf('lines[0].identifiers', { OrdNumber: 'PO-1', iOrderLines: [{}] }),
    ).toBe('iOrderLines[0].LineNumber');
    // Profile-only objects and items have no legacy source.
    expect(salesOrdersV1.sourceOf('shipping', order)).toBeUndefined();
    expect(salesOrdersV1.sourceOf('shipAddresses[0]', order)).toBeUndefined();
  });

  it('tells a work order’s finished-good lines from its part lines', () => {
    const order = {
      OrdNumber: 'WO-1',
      FinishedGoods: [
        { LineNumber: 1, FGParts: [{ ProductID: 'A', Qty: 1 }] },
        { LineNumber: 2, FGParts: [{ ProductID: 'B', Qty: -1 }, { ProductID: 'C' }] },
      ],
    };
    // v2 lines: 0 = good 0, 1 = its part 0, 2 = good 1, 3 and 4 = its parts 0 and 1.
    expect(workOrdersV1.sourceOf('lines[3].quantities.required', order)).toBe(
      'FinishedGoods[1].FGParts[0].Qty',
    );
    expect(workOrdersV1.sourceOf('lines[4].quantities', order)).toBe(
      'FinishedGoods[1].FGParts[1].Qty',
    );
    expect(workOrdersV1.sourceOf('lines[2].quantities.ordered', order)).toBe(
      'FinishedGoods[1].Qty',
    );
    expect(workOrdersV1.sourceOf('lines[1].skuId', order)).toBe(
      'FinishedGoods[0].FGParts[0].ProductID',
    );
    expect(workOrdersV1.sourceOf('lines[3]', order)).toBe('FinishedGoods[1].FGParts[0]');
    // A part's line number is made from its finished good's.
    expect(workOrdersV1.sourceOf('lines[4].line', order)).toBe('FinishedGoods[1].LineNumber');
    expect(workOrdersV1.sourceOf('lines[4].workOrderId', order)).toBe('OrdNumber');
    // The line rules are about the finished goods sent.
    expect(workOrdersV1.sourceOf('lines', order)).toBe('FinishedGoods');
    expect(workOrdersV1.sourceOf('workOrder.customerRef', order)).toBe('OrdNumber');
    expect(workOrdersV1.sourceOf('workOrder.class', order)).toBeUndefined();
    expect(workOrdersV1.sourceOf('(record)', order)).toBe('');
  });
});
