import { describe, expect, it } from 'vitest';
import { MessageIds, withoutPaths } from '../../src/ingest/message-id.js';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('stable message ids', () => {
  it('are UUIDs of version 8 and the same for the same business, kind and record', () => {
    const first = new MessageIds('ACME', 'sales-orders').next(body({ a: 1 }));
    const again = new MessageIds('ACME', 'sales-orders').next(body({ a: 1 }));
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(again).toBe(first);
  });

  it('keep the values they had in earlier releases: a file resumed or a batch retried after an upgrade gets the same ids', () => {
    // Pinned from the release before the one-shot hash: SHA-256 of "ACME\0sales-orders\0<JSON>".
    const record = {
      orderNumber: 'SO-1',
      identifiers: { businessId: 'ACME' },
      receivedAt: '2026-01-01T00:00:00Z',
      lines: [{ sku: 'Ä-1', qty: 2 }],
    };
    const ids = new MessageIds('ACME', 'sales-orders');
    expect(ids.forRecord(record, body(record))).toBe('1d69b552-9bda-8775-a620-807795118fd1');
    expect(ids.forRecord(record, JSON.stringify(record))).toBe(
      'a6bd574e-9fae-8534-b834-51f9e7feb42c', // the second occurrence
    );
    expect(new MessageIds('ACME', 'sales-orders').next(body(record))).toBe(
      '1d69b552-9bda-8775-a620-807795118fd1',
    );
    const volatile = new MessageIds('ACME', 'sales-orders', ['receivedAt']);
    expect(volatile.forRecord(record, body(record))).toBe('b4267ef8-136b-82be-b259-c69f463549ce');
    // `encode` (the array path: bytes and id from one encoding) gives the same ids and the exact bytes.
    const encoded = new MessageIds('ACME', 'sales-orders').encode(record, JSON.stringify(record));
    expect(encoded.messageId).toBe('1d69b552-9bda-8775-a620-807795118fd1');
    expect(encoded.body.equals(body(record))).toBe(true);
    const volatileEncoded = new MessageIds('ACME', 'sales-orders', ['receivedAt']).encode(
      record,
      JSON.stringify(record),
    );
    expect(volatileEncoded.messageId).toBe('b4267ef8-136b-82be-b259-c69f463549ce');
    expect(volatileEncoded.body.equals(body(record))).toBe(true);
  });

  it('differ by business, by kind and by content', () => {
    const id = new MessageIds('ACME', 'sales-orders').next(body({ a: 1 }));
    expect(new MessageIds('OTHER', 'sales-orders').next(body({ a: 1 }))).not.toBe(id);
    expect(new MessageIds('ACME', 'purchase-orders').next(body({ a: 1 }))).not.toBe(id);
    expect(new MessageIds('ACME', 'sales-orders').next(body({ a: 2 }))).not.toBe(id);
  });

  it('tell identical records of one batch apart, stably across retries', () => {
    const ids = new MessageIds('ACME', 'sales-orders');
    const batch = [ids.next(body({ a: 1 })), ids.next(body({ a: 1 })), ids.next(body({ a: 1 }))];
    expect(new Set(batch).size).toBe(3);
    const retry = new MessageIds('ACME', 'sales-orders');
    expect([
      retry.next(body({ a: 1 })),
      retry.next(body({ a: 1 })),
      retry.next(body({ a: 1 })),
    ]).toEqual(batch);
  });
});

describe('ids of records with receipt-time fields', () => {
  const record = (at: string) => ({
    identifiers: { id: 'RGA-1' },
    dates: { dueIn: at, receipt: at },
    lines: [{ dates: { receipt: at } }, { dates: { receipt: at } }],
  });
  const volatile = ['dates.dueIn', 'dates.receipt', 'lines[].dates.receipt'];
  const idOf = (r: Record<string, unknown>) =>
    new MessageIds('ACME', 'return-goods', volatile).forRecord(r, body(r));

  it('stay the same when only the receipt time differs', () => {
    expect(idOf(record('2026-03-01T12:00:00Z'))).toBe(idOf(record('2026-03-02T08:00:00Z')));
  });

  it('still differ when anything else differs', () => {
    const other = record('2026-03-01T12:00:00Z');
    other.identifiers.id = 'RGA-2';
    expect(idOf(other)).not.toBe(idOf(record('2026-03-01T12:00:00Z')));
  });

  it('leave the record itself unchanged', () => {
    const r = record('2026-03-01T12:00:00Z');
    const before = JSON.stringify(r);
    expect(withoutPaths(r, volatile)).toEqual({
      identifiers: { id: 'RGA-1' },
      dates: {},
      lines: [{ dates: {} }, { dates: {} }],
    });
    expect(JSON.stringify(r)).toBe(before);
  });
});
