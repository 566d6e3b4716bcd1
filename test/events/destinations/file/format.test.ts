import { describe, expect, it } from 'vitest';
import { warehouseEvent } from '../../../../src/events/event.js';
import {
  csvCell,
  fileSafeId,
  fileStamp,
  outboundFileContent,
  outboundFileName,
} from '../../../../src/events/destinations/file/format.js';

const event = warehouseEvent({
  id: 'evt-1',
  type: 'sales-order.shipped',
  businessId: 'ACME',
  occurredAt: new Date('2026-11-23T16:49:01Z'),
  data: { orderNumber: 'SO-1', note: 'a "quoted", multi\nline', lines: [{ sku: 'A-1', qty: 2 }] },
  correlationId: 'batch-7',
});

describe('outbound file names', () => {
  it('start with the ISO 8601 basic-format time, so sorting names sorts by time', () => {
    expect(fileStamp(new Date('2026-11-23T16:49:01.000Z'))).toBe('20261123T164901Z');
    const names = ['2026-11-23T09:00:00Z', '2026-11-23T16:49:01Z', '2027-01-01T00:00:00Z'].map(
      (t) =>
        outboundFileName({ ...event, occurredAt: new Date(t) }, { path: 'out', format: 'json' }),
    );
    expect([...names].sort()).toEqual(names);
    expect(names[1]).toBe('out/20261123T164901Z-sales-order.shipped-evt-1.json');
  });

  it('keep a safe id, and give an unsafe one its safe characters plus a hash (never two ids, one name)', () => {
    expect(fileSafeId('6f1c0e1a-1b2c-4d5e-8f90-1234567890ab')).toBe(
      '6f1c0e1a-1b2c-4d5e-8f90-1234567890ab',
    );
    const slash = fileSafeId('a/b');
    const colon = fileSafeId('a:b');
    expect(slash).toMatch(/^a_b~[0-9a-f]{16}$/);
    expect(colon).toMatch(/^a_b~[0-9a-f]{16}$/);
    expect(slash).not.toBe(colon);
    expect(fileSafeId('..')).toMatch(/^\.\.~/);
    expect(fileSafeId('x'.repeat(500)).length).toBeLessThan(100);
  });

  it('stay under 255 bytes for the longest type and id, and two long types never share a name', () => {
    const long = (end: string) => ({
      ...event,
      type: `sales-order.${'x'.repeat(228)}${end}`,
      id: 'i'.repeat(128),
    });
    const names = ['a', 'b'].map((end) =>
      outboundFileName(long(end), { path: 'out', format: 'json' }).slice('out/'.length),
    );
    for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(names[0]).not.toBe(names[1]);
  });
});

describe('outbound file content', () => {
  it('JSON: the webhook body with the event id first', () => {
    expect(outboundFileContent(event, { path: 'out', format: 'json' })).toBe(
      `${JSON.stringify(
        {
          id: 'evt-1',
          type: 'sales-order.shipped',
          timestamp: '2026-11-23T16:49:01.000Z',
          businessId: 'ACME',
          data: event.data,
          correlationId: 'batch-7',
        },
        null,
        2,
      )}\n`,
    );
  });

  it('CSV: a header of the declared columns and one RFC 4180 row, CRLF', () => {
    const csv = outboundFileContent(event, {
      path: 'out',
      format: 'csv',
      columns: [
        '$id',
        '$type',
        '$occurredAt',
        'orderNumber',
        'note',
        'lines.0.sku',
        'lines',
        'nope.x',
      ],
    });
    expect(csv).toBe(
      '$id,$type,$occurredAt,orderNumber,note,lines.0.sku,lines,nope.x\r\n' +
        'evt-1,sales-order.shipped,2026-11-23T16:49:01.000Z,SO-1,"a ""quoted"", multi\nline",A-1,"[{""sku"":""A-1"",""qty"":2}]",\r\n',
    );
  });

  it('CSV cells: empty for missing and null, JSON for objects, quotes only when needed', () => {
    expect(csvCell(undefined)).toBe('');
    expect(csvCell(null)).toBe('');
    expect(csvCell(3.5)).toBe('3.5');
    expect(csvCell(false)).toBe('false');
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a\rb')).toBe('"a\rb"');
  });

  it('reads own keys only: a path through the prototype gives nothing', () => {
    const csv = outboundFileContent(event, { path: 'o', format: 'csv', columns: ['constructor'] });
    expect(csv).toBe('constructor\r\n""\r\n'); // one empty cell, quoted: not a blank line
  });
});
