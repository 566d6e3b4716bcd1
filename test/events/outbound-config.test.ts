import { describe, expect, it } from 'vitest';
import { loadPipelines } from '../../src/drops/definition.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const EXAMPLES = new URL('../../pipelines/examples/', import.meta.url).pathname;

const BASE = [
  'name: p',
  'businessId: ACME',
  'kind: sales-orders',
  'format: v2-json',
  'source: { type: local, path: /srv/drop }',
];

function problemsFor(events: string) {
  const temp = tempFolder();
  temp.write('p.yaml', [...BASE, `events: ${events}`].join('\n'));
  return problemsOf(() => loadPipelines(temp.dir)).map((p) => `${p.field}: ${p.message}`);
}

describe('a pipeline with outbound files (events)', () => {
  it('loads the example with its folder normalised and its columns', () => {
    const acme = loadPipelines(EXAMPLES).find((p) => p.name === 'acme-orders');
    expect(acme?.events).toEqual({
      path: 'events',
      format: 'csv',
      columns: ['$id', '$type', '$occurredAt', 'orderNumber', 'trackingNumber'],
      types: ['sales-order.*'],
    });
  });

  it('defaults to JSON files of every event type', () => {
    const temp = tempFolder();
    temp.write('p.yaml', [...BASE, 'events: { path: outbound/ }'].join('\n'));
    expect(loadPipelines(temp.dir)[0]?.events).toEqual({
      path: 'outbound',
      format: 'json',
      types: ['**'],
    });
  });

  it.each([
    ['{ path: "" }', 'events.path'],
    ['{ path: ./ }', 'events.path'],
    ['{ path: /abs }', 'events.path'],
    ['{ path: a/../../b }', 'events.path'],
    ['{ path: .warehouse-ingest/x }', 'events.path'],
    ['{ path: processed }', 'events.path'],
    ['{ path: out, format: csv }', 'events.columns'],
    ['{ path: out, columns: [a] }', 'events.columns'],
    ['{ path: out, format: csv, columns: ["a b"] }', 'events.columns[0]'],
    ['{ path: out, format: xml }', 'events.format'],
  ])('refuses events %s naming %s', (events, field) => {
    expect(problemsFor(events).join('\n')).toContain(`${field}:`);
  });

  it('names the file and field of a folder clash', () => {
    expect(problemsFor('{ path: failed }')).toEqual([
      'events.path: "failed" is where inputs are settled: give outbound events their own folder',
    ]);
  });
});
