import { describe, expect, it } from 'vitest';
import {
  compileRoutingKey,
  MAX_ROUTING_KEY_BYTES,
  templateFields,
  topicMatches,
} from '../../src/ingest/route.js';

describe('routing-key templates', () => {
  it('fills kind and business id', () => {
    expect(compileRoutingKey('{kind}.{businessId}')('sales-orders', 'ACME', {})).toBe(
      'sales-orders.ACME',
    );
  });

  it('fills record fields, one topic word each, never adding words or wildcards', () => {
    const key = compileRoutingKey('{kind}.{businessId}.{identifiers.site}.{identifiers.warehouse}');
    expect(key('sales-orders', 'AC.ME', { identifiers: { site: 'UK 01', warehouse: 'W#*' } })).toBe(
      'sales-orders.AC_ME.UK_01.W__',
    );
    expect(key('master-data', 'ACME', { product: {} })).toBe('master-data.ACME._._');
    expect(key('sales-orders', 'ACME', { identifiers: { site: '' } })).toBe(
      'sales-orders.ACME._._',
    );
  });

  it('keeps literal text and lists the record fields a template uses', () => {
    expect(compileRoutingKey('ingest.{kind}.v2')('work-orders', 'X', {})).toBe(
      'ingest.work-orders.v2',
    );
    expect(templateFields('{kind}.{businessId}.{identifiers.site}')).toEqual(['identifiers.site']);
  });
});

describe('routing keys AMQP cannot carry', () => {
  const template = '{kind}.{businessId}.{identifiers.site}.{identifiers.warehouse}';
  const route = compileRoutingKey(template);
  const record = (site: string) => ({ identifiers: { site, warehouse: 'WH-MAN' } });
  const problemOf = (site: string) => {
    const r = record(site);
    return route.problem?.(route('sales-orders', 'ACME', r), r);
  };
  // 'sales-orders.ACME.' + site + '.WH-MAN' is 25 bytes besides the site.
  const room = MAX_ROUTING_KEY_BYTES - 'sales-orders.ACME..WH-MAN'.length;

  it('accepts a key of exactly 255 bytes, multi-byte characters counted as bytes', () => {
    expect(problemOf('S'.repeat(room))).toBeUndefined();
    expect(problemOf('é'.repeat(Math.floor(room / 2)))).toBeUndefined();
  });

  it('names the field that makes a key one byte too long, with the template and the sizes', () => {
    expect(problemOf('S'.repeat(room + 1))).toBe(
      `identifiers.site: Too long to route: the routing key this record gets (broker.routingKey "${template}") is 256 bytes; AMQP allows at most 255`,
    );
    expect(problemOf('é'.repeat(Math.floor(room / 2) + 1))).toMatch(
      /^identifiers\.site: .* 25[67] bytes/,
    );
  });
});

describe('topic matching (as RabbitMQ does it)', () => {
  it.each([
    ['#', 'a.b.c', true],
    ['a.#', 'a', true],
    ['a.#', 'a.b.c', true],
    ['a.*', 'a.b', true],
    ['a.*', 'a.b.c', false],
    ['*.b', 'a.b', true],
    ['a.#.c', 'a.c', true],
    ['a.#.c', 'a.x.y.c', true],
    ['sales-orders.#', 'master-data.ACME', false],
    ['sales-orders.ACME', 'sales-orders.ACME', true],
  ])('%s matches %s: %s', (binding, key, expected) => {
    expect(topicMatches(binding, key)).toBe(expected);
  });
});
