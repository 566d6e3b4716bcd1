/** The kind table and what each kind declares about itself. */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  KIND_NAMES,
  KINDS,
  PARSE_OPTIONS,
  kindByName,
  masterDataSchema,
  purchaseOrderSchema,
  returnGoodsSchema,
  salesOrderSchema,
  workOrderSchema,
  type KindName,
} from '../../src/records/index.js';
import { invalidFixtures, validRecords } from './fixtures.js';

/** The schemas as written, before a kind module hands zod's compiled clone to `KINDS`. */
const DEFINED: Record<KindName, z.ZodType> = {
  'master-data': masterDataSchema,
  'sales-orders': salesOrderSchema,
  'purchase-orders': purchaseOrderSchema,
  'return-goods': returnGoodsSchema,
  'work-orders': workOrderSchema,
};

const at = (value: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>(
    (current, key) => (current as Record<string, unknown> | undefined)?.[key],
    value,
  );

describe('KINDS', () => {
  it('has exactly one entry per kind name, under its own name', () => {
    expect(Object.keys(KINDS).sort()).toEqual([...KIND_NAMES].sort());
    for (const name of KIND_NAMES) expect(KINDS[name].name).toBe(name);
  });

  it('finds kinds by name and nothing else', () => {
    expect(kindByName('work-orders')).toBe(KINDS['work-orders']);
    for (const name of ['workorders', 'Sales-Orders', '', '__proto__', 'constructor', 'toString']) {
      expect(kindByName(name)).toBeUndefined();
    }
  });

  it.each(KIND_NAMES)(
    '%s: business id and reference paths point at non-empty strings in valid records',
    (name) => {
      const kind = KINDS[name];
      for (const record of validRecords(name)) {
        expect(at(record, kind.businessIdPath)).toBe('ACME');
        expect(at(record, kind.referencePath)).toEqual(expect.stringMatching(/.+/));
      }
    },
  );

  it('declares order.type as platform-set only for purchase orders and return goods', () => {
    const withPlatformFields = KIND_NAMES.filter((name) => KINDS[name].platformFields.length > 0);
    expect(withPlatformFields).toEqual<KindName[]>(['purchase-orders', 'return-goods']);
    expect(KINDS['purchase-orders'].platformFields).toEqual([['order', 'type']]);
    expect(KINDS['return-goods'].platformFields).toEqual([['order', 'type']]);
  });
});

describe('compiled schemas', () => {
  // z.compile builds a separate fast path; it must answer exactly as the schema as written.
  it.each(KIND_NAMES)(
    '%s: the kind schema agrees with the defined schema on every fixture record',
    (name) => {
      const inputs = [
        ...validRecords(name),
        ...invalidFixtures(name).flatMap((fixture) => fixture.batch),
      ];
      for (const input of inputs) {
        const fast = KINDS[name].schema.safeParse(input, PARSE_OPTIONS);
        const plain = DEFINED[name].safeParse(input, PARSE_OPTIONS);
        expect(fast.success).toBe(plain.success);
        if (fast.success) expect(fast.data).toEqual(plain.data);
        else expect(fast.error?.issues).toEqual(plain.error?.issues);
      }
    },
  );
});
