// biome-ignore-all lint/suspicious/noExplicitAny: the tests reach deep into canonical records to change one field; a type per path would only restate the schema
/** validateRecord: parse with the error map, platform fields, tenancy (spec §5.4). */
import { describe, expect, it } from 'vitest';
import { KINDS, validateRecord } from '../../src/records/index.js';
import { BUSINESS_ID, validRecords } from './fixtures.js';

const TENANCY = 'Must equal the authenticated business id';
const salesOrder = () => structuredClone(validRecords('sales-orders')[0]!) as Record<string, any>;
const product = () => structuredClone(validRecords('master-data')[0]!) as Record<string, any>;
const purchaseOrder = () =>
  structuredClone(validRecords('purchase-orders')[0]!) as Record<string, any>;

describe('validateRecord', () => {
  it('returns the parsed record on success', () => {
    const input = salesOrder();
    const result = validateRecord(KINDS['sales-orders'], input, BUSINESS_ID);
    expect(result).toEqual({ ok: true, record: input });
  });

  it('keeps fields the spec does not list, at every level', () => {
    const input = salesOrder();
    input.identifiers.channel = 'marketplace';
    input.shipmentLines[0].product.colour = 'blue';
    input.extra = { nested: [1, 'two', null] };
    const result = validateRecord(KINDS['sales-orders'], input, BUSINESS_ID);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const record = result.record as Record<string, any>;
    expect(record.identifiers.channel).toBe('marketplace');
    expect(record.shipmentLines[0].product.colour).toBe('blue');
    expect(record.extra).toEqual({ nested: [1, 'two', null] });
  });

  it('removes order.type from a purchase order, whatever its value, without touching the input', () => {
    for (const type of ['INBOUND', 7, null, { any: 'thing' }]) {
      const input = purchaseOrder();
      input.order.type = type;
      const result = validateRecord(KINDS['purchase-orders'], input, BUSINESS_ID);
      if (!result.ok) throw new Error(result.errors.join('\n'));
      expect(result.record.order).toEqual({ class: input.order.class });
      expect(input.order.type).toEqual(type);
    }
  });

  it('removes order.type from a return goods authorisation', () => {
    const input = structuredClone(validRecords('return-goods')[0]!) as Record<string, any>;
    expect(input.order.type).toBeDefined();
    const result = validateRecord(KINDS['return-goods'], input, BUSINESS_ID);
    expect(result.ok && 'type' in (result.record.order as object)).toBe(false);
  });

  it('rejects non-finite numbers, which JSON can carry as overflow (1e999)', () => {
    const input = JSON.parse(
      JSON.stringify(salesOrder()).replace('"ordered":3', '"ordered":1e999'),
    );
    expect(validateRecord(KINDS['sales-orders'], input, BUSINESS_ID)).toEqual({
      ok: false,
      errors: ['shipmentLines[0].quantities.ordered: Expected number, received infinity'],
    });
  });
});

describe('timestamps (ISO 8601 with the UTC designator)', () => {
  const dueOut = (value: unknown) => {
    const input = salesOrder();
    input.dates.dueOut = value;
    return validateRecord(KINDS['sales-orders'], input, BUSINESS_ID);
  };

  it.each([
    '2026-02-03T10:00Z',
    '2026-02-03T10:00:00Z',
    '2026-02-03T10:00:00.5Z',
    '2026-02-03T10:00:00z',
    '2026-02-03t10:00:00Z',
    '2024-02-29T23:59:59.999Z',
  ])('accepts %s and publishes it as received', (value) => {
    const result = dueOut(value);
    expect(result.ok).toBe(true);
    if (result.ok) expect((result.record as any).dates.dueOut).toBe(value);
  });

  it.each([
    '2026-02-30T10:00Z',
    '2026-02-03T10Z',
    '2026-02-03T10:00:00+01:00',
    '2026-02-03T10:00:00',
    '2026-02-03',
    '2026-02-03T10:00:00ZZ',
  ])('refuses %s', (value) => {
    expect(dueOut(value)).toEqual({
      ok: false,
      errors: [
        'dates.dueOut: Expected an ISO 8601 date-time with UTC designator (e.g. 2026-01-31T09:30:00Z)',
      ],
    });
  });
});

describe('reserved keys', () => {
  it('refuses a "__proto__" key by name, at any depth, instead of dropping it silently', () => {
    const text = JSON.stringify(salesOrder())
      .replace('{', '{"__proto__":{"polluted":true},')
      .replace('"shipmentLines":[{', '"shipmentLines":[{"__proto__":1,');
    const input = JSON.parse(text) as unknown;
    expect(validateRecord(KINDS['sales-orders'], input, BUSINESS_ID)).toEqual({
      ok: false,
      errors: [
        '__proto__: Not allowed: "__proto__" is a reserved name; rename the field',
        'shipmentLines[0].__proto__: Not allowed: "__proto__" is a reserved name; rename the field',
      ],
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('tenancy', () => {
  it('rejects a record for another business without echoing either id', () => {
    const input = salesOrder();
    input.identifiers.businessId = 'GLOBEX';
    const result = validateRecord(KINDS['sales-orders'], input, 'ACME');
    expect(result).toEqual({ ok: false, errors: [`identifiers.businessId: ${TENANCY}`] });
    expect(JSON.stringify(result)).not.toMatch(/GLOBEX|ACME/);
  });

  it('compares exactly: case and whitespace matter', () => {
    const input = salesOrder();
    expect(validateRecord(KINDS['sales-orders'], input, 'acme').ok).toBe(false);
    expect(validateRecord(KINDS['sales-orders'], input, 'ACME ').ok).toBe(false);
  });

  it('uses product.identifiers.businessId for master data', () => {
    expect(validateRecord(KINDS['master-data'], product(), 'INITECH')).toEqual({
      ok: false,
      errors: [`product.identifiers.businessId: ${TENANCY}`],
    });
  });

  it("passes someone else's businessId deeper in the record through (a B2B customer's own id, a line's supplier)", () => {
    const input = salesOrder();
    input.customer.businessId = 'CUST-B2B-77';
    const result = validateRecord(KINDS['sales-orders'], input, BUSINESS_ID);
    expect(result).toMatchObject({ ok: true, record: { customer: { businessId: 'CUST-B2B-77' } } });
    const data = product();
    data.product.information.businessId = 'MAKER-1';
    expect(validateRecord(KINDS['master-data'], data, 'ACME').ok).toBe(true);
  });

  it('still refuses a foreign businessId (or v1 AccountID) beside the checked field or at the record root', () => {
    const input = { ...salesOrder(), businessId: 'GLOBEX' };
    expect(validateRecord(KINDS['sales-orders'], input, BUSINESS_ID)).toEqual({
      ok: false,
      errors: [`businessId: ${TENANCY}`],
    });
    const data = product();
    data.product.AccountID = 'GLOBEX';
    expect(validateRecord(KINDS['master-data'], data, 'ACME')).toEqual({
      ok: false,
      errors: [`product.AccountID: ${TENANCY}`],
    });
  });

  it('reports tenancy together with the schema errors, tenancy first', () => {
    const input = salesOrder();
    input.identifiers.businessId = 'GLOBEX';
    delete input.customer;
    input.financial.lineValue = '84.50';
    expect(validateRecord(KINDS['sales-orders'], input, BUSINESS_ID)).toEqual({
      ok: false,
      errors: [
        `identifiers.businessId: ${TENANCY}`,
        'customer: Required',
        'financial.lineValue: Expected number, received string',
      ],
    });
  });

  it.each([
    ['missing', undefined, 'identifiers.businessId: Required'],
    ['a number', 42, 'identifiers.businessId: Expected string, received number'],
    ['empty', '', 'identifiers.businessId: Expected at least 1 character'],
  ])('reports only the schema error when the business id is %s', (_case, value, error) => {
    const input = salesOrder();
    if (value === undefined) delete input.identifiers.businessId;
    else input.identifiers.businessId = value;
    expect(validateRecord(KINDS['sales-orders'], input, BUSINESS_ID)).toEqual({
      ok: false,
      errors: [error],
    });
  });
});
