import type { OutgoingSet } from './write.js';

/**
 * Warehouse events as X12 transaction sets, for a partner that takes EDI in its drop:
 * `sales-order.shipped` → 945 Warehouse Shipping Advice, `purchase-order.received` → 944
 * Warehouse Stock Transfer Receipt Advice. Built from the event's catalog `data` (order number,
 * lines of SKU and quantity, a tracking number) and the published 004010/005010 layouts; the
 * tables are in docs/formats-x12.md.
 */
export interface AdviceEvent {
  readonly id: string;
  readonly type: string;
  readonly occurredAt: Date;
  readonly data: Readonly<Record<string, unknown>>;
}

interface Line {
  readonly sku: string;
  readonly qty: number;
  readonly unit: string;
}

/** The event's lines (`sku`, `qty`, an optional `unitOfMeasure`), those the catalog allows only. */
function linesOf(data: AdviceEvent['data']): Line[] {
  const lines = Array.isArray(data.lines) ? data.lines : [];
  return lines.flatMap((line: unknown) => {
    if (typeof line !== 'object' || line === null) return [];
    const { sku, qty, unitOfMeasure } = line as Record<string, unknown>;
    if (typeof sku !== 'string' || typeof qty !== 'number') return [];
    return [{ sku, qty, unit: typeof unitOfMeasure === 'string' ? unitOfMeasure : 'EA' }];
  });
}

const day = (at: Date) => at.toISOString().slice(0, 10).replace(/-/g, '');
const hhmm = (at: Date) => at.toISOString().slice(11, 16).replace(':', '');
const text = (value: unknown) => (typeof value === 'string' ? value : '');
/** X12 numbers: no exponent, no trailing zeros. */
const quantity = (n: number) => String(Number(n.toFixed(4)));
/** An id element of up to 30 characters (W0604, W1703): the event id, cut. */
const reference = (id: string) => id.slice(0, 30);

function shippingAdvice(event: AdviceEvent): OutgoingSet {
  const { data } = event;
  const lines = linesOf(data);
  const carrier = text(data.carrier);
  const tracking = text(data.trackingNumber);
  const segments: string[][] = [
    ['W06', 'F', text(data.orderNumber), day(event.occurredAt), reference(event.id)],
    ...(tracking ? [['N9', 'CN', tracking]] : []),
    ['G62', '11', day(event.occurredAt), '8', hhmm(event.occurredAt)],
    // W2701 M (motor, common carrier) needs W2702, the SCAC; without a carrier, ZZ (mutually defined).
    carrier ? ['W27', 'M', carrier] : ['W27', 'ZZ'],
  ];
  lines.forEach((line, i) => {
    segments.push(['LX', String(i + 1)]);
    segments.push([
      'W12',
      'CC',
      quantity(line.qty),
      quantity(line.qty),
      '0',
      line.unit,
      '',
      'SK',
      line.sku,
    ]);
  });
  segments.push(['W03', quantity(lines.reduce((sum, l) => sum + l.qty, 0))]);
  return { id: '945', segments };
}

function receiptAdvice(event: AdviceEvent): OutgoingSet {
  const lines = linesOf(event.data);
  const segments: string[][] = [
    ['W17', 'F', day(event.occurredAt), reference(event.id), text(event.data.orderNumber)],
    ['G62', '09', day(event.occurredAt), '8', hhmm(event.occurredAt)],
  ];
  lines.forEach((line, i) => {
    segments.push(['LX', String(i + 1)]);
    segments.push(['W07', quantity(line.qty), line.unit, '', 'SK', line.sku]);
  });
  segments.push(['W14', quantity(lines.reduce((sum, l) => sum + l.qty, 0))]);
  return { id: '944', segments };
}

/** The transaction set and functional group (GS01) each event type is written as. */
export const ADVICE: Readonly<
  Record<
    string,
    { readonly set: string; readonly functionalId: string; build(event: AdviceEvent): OutgoingSet }
  >
> = {
  'sales-order.shipped': { set: '945', functionalId: 'SW', build: shippingAdvice },
  'purchase-order.received': { set: '944', functionalId: 'AR', build: receiptAdvice },
};
