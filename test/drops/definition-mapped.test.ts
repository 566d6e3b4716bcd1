import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { inputNames } from '../../src/drops/upload-ready.js';

/** The mapped formats' pipeline keys: where they apply, their defaults, what each refuses. */
const base = {
  name: 'partner',
  businessId: 'DEMO',
  kind: 'sales-orders',
  source: { type: 'local', path: '/unused' },
};
const issues = (input: Record<string, unknown>) => {
  const result = pipelineSchema.safeParse({ ...base, ...input });
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('the mapped formats in a pipeline', () => {
  it('takes csv with its layout and a mapping, defaults filled in', () => {
    const parsed = pipelineSchema.parse({
      ...base,
      format: 'csv',
      csv: { delimiter: ';', header: ['A', 'B'] },
      mapping: { jsonata: '{}', groupBy: 'A' },
    });
    expect(parsed.csv).toEqual({
      delimiter: ';',
      quote: '"',
      escape: '"',
      encoding: 'utf-8',
      skipLines: 0,
      header: ['A', 'B'],
    });
    expect(parsed.mapping).toMatchObject({ timeoutMs: 1000, maxDepth: 500 });
    expect(inputNames(parsed)('orders.csv')).toBe(true);
    expect(inputNames(parsed)('orders.json')).toBe(false);
  });

  it.each([
    [{ format: 'csv' }, ['mapping: Required for format csv']],
    [{ format: 'json', mapping: { jsonata: '{}' }, csv: {} }, ['csv: Only for format csv']],
    [{ format: 'csv', mapping: { jsonata: '{}' }, json: {} }, ['json: Only for format json']],
    [{ format: 'v1-csv', mapping: { jsonata: '{}' } }, ['mapping: Only for format csv or json']],
    [
      { format: 'csv', mapping: { jsonata: '{}', file: 'm.jsonata' } },
      ['mapping.jsonata: Give the expression inline (jsonata) or in a file (file): one of them'],
    ],
    [
      { format: 'csv', mapping: {} },
      ['mapping.jsonata: Give the expression inline (jsonata) or in a file (file): one of them'],
    ],
    [
      { format: 'csv', csv: { delimiter: ';;' }, mapping: { jsonata: '{}' } },
      ['csv.delimiter: Expected one character'],
    ],
  ])('refuses %j', (input, expected) => {
    expect(issues(input)).toEqual(expected);
  });
});
