/** The one error map and the `<field path>: <message>` formatting (spec §2.2). */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PARSE_OPTIONS, formatIssues, formatPath, receivedType } from '../../src/records/issues.js';

/** Messages for one parse of `input`, exactly as a 400 would list them. */
function messages(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input, PARSE_OPTIONS);
  return result.success ? [] : formatIssues(result.error.issues);
}

const record = z.looseObject({
  financial: z.looseObject({ lineValue: z.number(), dutyPaid: z.boolean().optional() }),
  lines: z
    .array(z.looseObject({ quantities: z.looseObject({ ordered: z.number().min(0) }) }))
    .min(1),
});

describe('messages', () => {
  it('reports a missing field as Required', () => {
    expect(messages(record, { lines: [{ quantities: {} }] })).toEqual([
      'financial: Required',
      'lines[0].quantities.ordered: Required',
    ]);
  });

  it.each([
    ['string', '84.50'],
    ['null', null],
    ['array', [84.5]],
    ['object', { amount: 84.5 }],
    ['boolean', false],
  ])('reports a wrong type as Expected number, received %s', (received, value) => {
    expect(
      messages(record, {
        financial: { lineValue: value },
        lines: [{ quantities: { ordered: 1 } }],
      }),
    ).toEqual([`financial.lineValue: Expected number, received ${received}`]);
  });

  it('names NaN and Infinity, which are numbers to typeof but not to the spec', () => {
    expect(receivedType(Number.NaN)).toBe('nan');
    expect(receivedType(Number.POSITIVE_INFINITY)).toBe('infinity');
    expect(receivedType(10n)).toBe('bigint');
    expect(messages(z.number(), Number.NaN)).toEqual(['(record): Expected number, received nan']);
  });

  it('words bounds for strings, arrays and numbers', () => {
    expect(messages(z.string().min(1), '')).toEqual(['(record): Expected at least 1 character']);
    expect(messages(z.string().min(3), '')).toEqual(['(record): Expected at least 3 characters']);
    expect(messages(z.string().length(2), '123')).toEqual([
      '(record): Expected exactly 2 characters',
    ]);
    expect(messages(z.string().max(2), '123')).toEqual(['(record): Expected at most 2 characters']);
    expect(messages(z.array(z.string()).min(1), [])).toEqual([
      '(record): Expected at least 1 item',
    ]);
    expect(messages(z.number().min(0), -0.5)).toEqual(['(record): Expected a number >= 0']);
    expect(messages(z.number().positive(), 0)).toEqual(['(record): Expected a number > 0']);
  });

  it('lists the allowed values of an enum, and a missing one is Required', () => {
    const role = z.looseObject({ role: z.enum(['finished_good', 'component']) });
    expect(messages(role, { role: 'kit' })).toEqual([
      'role: Expected one of: finished_good, component',
    ]);
    expect(messages(role, {})).toEqual(['role: Required']);
  });

  it('does the same for a discriminated union tag', () => {
    const line = z.discriminatedUnion('role', [
      z.looseObject({ role: z.literal('finished_good') }),
      z.looseObject({ role: z.literal('component') }),
    ]);
    expect(messages(line, { role: 'kit' })).toEqual([
      'role: Expected one of: finished_good, component',
    ]);
    expect(messages(line, {})).toEqual(['role: Required']);
  });

  it('explains the timestamp form with an example', () => {
    expect(messages(z.iso.datetime(), '2026-01-31T09:30:00+01:00')).toEqual([
      '(record): Expected an ISO 8601 date-time with UTC designator (e.g. 2026-01-31T09:30:00Z)',
    ]);
  });

  it('keeps the own message of a refinement', () => {
    const schema = z
      .string()
      .refine((s) => s.startsWith('SKU-'), { message: 'Must start with SKU-' });
    expect(messages(schema, 'TEA-100')).toEqual(['(record): Must start with SKU-']);
  });

  it('lists every failing field, in schema order, not only the first', () => {
    expect(
      messages(record, {
        lines: [{ quantities: { ordered: -1 } }, 'x'],
        financial: { lineValue: '1', dutyPaid: 1 },
      }),
    ).toEqual([
      'financial.lineValue: Expected number, received string',
      'financial.dutyPaid: Expected boolean, received number',
      'lines[0].quantities.ordered: Expected a number >= 0',
      'lines[1]: Expected object, received string',
    ]);
  });

  it('is passed per parse: zod’s global wording is left alone', () => {
    const result = z.looseObject({ a: z.string() }).safeParse({});
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).not.toBe('Required');
  });
});

describe('formatPath', () => {
  it('joins names with dots and puts array positions in brackets', () => {
    expect(formatPath(['shipmentLines', 0, 'quantities', 'ordered'])).toBe(
      'shipmentLines[0].quantities.ordered',
    );
    expect(formatPath(['lines', 12])).toBe('lines[12]');
    expect(formatPath(['product', 'alternatives', 1, 'type'])).toBe('product.alternatives[1].type');
  });

  it('calls the record itself (record)', () => {
    expect(formatPath([])).toBe('(record)');
    expect(messages(record, 'SO-1')).toEqual(['(record): Expected object, received string']);
  });
});
