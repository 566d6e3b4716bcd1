import { describe, expect, it } from 'vitest';
import { applyDefaults } from '../../src/records/legacy/mapping.js';

describe('legacy profile defaults (applyDefaults)', () => {
  it('fills only what is missing, or sets outright with overwrite', () => {
    const record: Record<string, unknown> = { shipTo: { country: 'NL' } };
    applyDefaults(record, { 'shipTo.country': 'DE', 'shipTo.city': 'Utrecht', currency: 'EUR' });
    expect(record).toEqual({ shipTo: { country: 'NL', city: 'Utrecht' }, currency: 'EUR' });
    applyDefaults(record, { 'shipTo.country': 'BE' }, true);
    expect(record).toEqual({ shipTo: { country: 'BE', city: 'Utrecht' }, currency: 'EUR' });
  });

  it('reaches every item of an array, also arrays within items, and skips what is not an array', () => {
    const record: Record<string, unknown> = {
      lines: [{ sku: 'A' }, { sku: 'B', uom: 'BOX' }, 'not an item'],
      parts: 'not an array',
      orders: [{ lines: [{ n: 1 }, { n: 2, site: 'X' }] }],
    };
    applyDefaults(record, {
      'lines[].uom': 'EA',
      'parts[].x': 1,
      'orders[].lines[].site': 'DEFAULT',
    });
    expect(record).toEqual({
      lines: [{ sku: 'A', uom: 'EA' }, { sku: 'B', uom: 'BOX' }, 'not an item'],
      parts: 'not an array',
      orders: [
        {
          lines: [
            { n: 1, site: 'DEFAULT' },
            { n: 2, site: 'X' },
          ],
        },
      ],
    });
  });

  it('gives every record its own copy of an object or array default', () => {
    const defaults = { carrier: { name: 'DHL', services: ['express'] } };
    const first: Record<string, unknown> = {};
    const second: Record<string, unknown> = {};
    applyDefaults(first, defaults);
    applyDefaults(second, defaults);
    (first.carrier as { services: string[] }).services.push('changed');
    expect(second).toEqual({ carrier: { name: 'DHL', services: ['express'] } });
    expect(defaults.carrier.services).toEqual(['express']);
    const at = new Date('2026-01-01T00:00:00Z');
    const third: Record<string, unknown> = {};
    applyDefaults(third, { at });
    expect(third.at).toEqual(at);
    expect(third.at).not.toBe(at);
  });
});
