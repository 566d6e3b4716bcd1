/**
 * Text no store can keep (issue 38, item 1): a NUL character or a lone UTF-16 surrogate in any
 * text of a record — a field the spec lists or not, a key or a value — is refused at validation,
 * with a 400 naming the field, on v2 and v1 alike: one check for every kind, not a rule per field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KIND_NAMES, KINDS, validateRecord } from '../../src/records/index.js';
import { createTestApp, type TestApp, answer } from '../support/http-app.js';
import { BUSINESS_ID, validRecords } from './fixtures.js';

const MESSAGE = 'Must not contain a NUL character (\\u0000) or an unpaired UTF-16 surrogate';

/** The path (`a.b[0].c`) of every string value in a record. */
function stringPaths(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return [path];
  if (Array.isArray(value)) return value.flatMap((item, i) => stringPaths(item, `${path}[${i}]`));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([key, child]) =>
      stringPaths(child, path === '' ? key : `${path}.${key}`),
    );
  return [];
}

/** A copy of `record` with the string at `path` replaced by what `change` makes of it. */
function withText(record: unknown, path: string, change: (text: string) => string): unknown {
  const copy = structuredClone(record) as Record<string, unknown>;
  const steps = path.match(/[^.[\]]+/g) ?? [];
  let parent: Record<string, unknown> = copy;
  for (const step of steps.slice(0, -1)) parent = parent[step] as Record<string, unknown>;
  const last = steps.at(-1) ?? '';
  parent[last] = change(parent[last] as string);
  return copy;
}

const UNSAFE = {
  NUL: (text: string) => `${text}\u0000`,
  'a lone high surrogate': (text: string) => `\ud800${text}`,
  'a lone low surrogate': (text: string) => `${text}\udc00`,
} as const;

describe.each(KIND_NAMES)('unsafe text in a %s record', (kind) => {
  const record = validRecords(kind)[0];
  const paths = stringPaths(record);

  it('is refused in every string field of the fixture, each named by its path', () => {
    expect(paths.length).toBeGreaterThan(5);
    for (const [what, change] of Object.entries(UNSAFE)) {
      for (const path of paths) {
        const result = validateRecord(KINDS[kind], withText(record, path, change), BUSINESS_ID);
        const errors = result.ok ? [] : result.errors;
        // A field with a format or a list of values (a time, a role), or the business id, also
        // breaks its own rule (or its list's: a work order's one finished good): that error is named
        // too, and none about another field.
        expect(errors, `${what} in ${path}`).toContain(`${path}: ${MESSAGE}`);
        for (const error of errors)
          expect(path.startsWith(error.slice(0, error.indexOf(': '))), error).toBe(true);
      }
    }
  });

  it('is refused in a field the spec does not list, and in a key', () => {
    const input = structuredClone(record) as Record<string, unknown>;
    input.extra = { notes: ['fine', 'bad\u0000'], 'key\u0000': 1 };
    const result = validateRecord(KINDS[kind], input, BUSINESS_ID);
    expect(result).toEqual({
      ok: false,
      errors: [`extra.notes[1]: ${MESSAGE}`, `extra.key\u0000: ${MESSAGE}`],
    });
  });

  it('keeps well-formed text: a surrogate pair (an emoji) and every other control character', () => {
    const input = withText(record, paths[0] ?? '', (text) => `${text} \ud83d\ude00 \u0001\t`);
    expect(validateRecord(KINDS[kind], input, BUSINESS_ID).ok).toBe(true);
  });
});

describe('over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers a v2 record whose order number holds \\u0000 with a 400 naming the field, and publishes nothing', async () => {
    const [good, other] = validRecords('sales-orders') as Array<{
      identifiers: { shipmentId: string };
    }>;
    const bad = structuredClone(other) as { identifiers: { shipmentId: string } };
    bad.identifiers.shipmentId = 'SO-\u00001';
    const response = await t.post('sales-orders', [good, bad]);
    expect(response.status).toBe(400);
    expect(await answer(response)).toMatchObject({
      type: '/problems/validation-failed',
      errors: [{ index: 1, errors: [`identifiers.shipmentId: ${MESSAGE}`] }],
    });
    expect(await t.topology.count()).toBe(0);
  });

  it('answers the same for a lone surrogate sent as a JSON escape', async () => {
    const [good] = validRecords('sales-orders');
    const raw = JSON.stringify([good]).replace(
      '"identifiers":{',
      '"identifiers":{"note":"\\udc01",',
    );
    const response = await t.post('sales-orders', undefined, { raw });
    expect(response.status).toBe(400);
    expect((await answer(response)).errors).toEqual([
      { index: 0, errors: [`identifiers.note: ${MESSAGE}`] },
    ]);
  });
});
