import type { TransactionSet } from './envelope.js';
import { RecordBuilder } from './build.js';
import type { Carrier } from './partner-terms.js';
import { productId } from './sales-orders.js';

/**
 * 943 Warehouse Stock Transfer Shipment Advice → one v2 purchase order: the goods the depositor
 * shipped to the warehouse, i.e. the receipt the warehouse should expect (docs/interface.md: a
 * purchase order is the inbound stock's record). Published layout: W06, N1 loop, N9, G62, NTE,
 * W27, then a W04 loop per item, W03 totals. Table in docs/formats-x12.md.
 */
export const CARRIERS_943: readonly Carrier[] = [
  { path: 'identifiers.id', segment: 'W06', shown: 'W06' },
  { path: 'supplier', segment: 'N1', shown: 'N1*SF' },
  { path: 'dates.dueIn', segment: 'G62', shown: 'G62*17' },
  { path: 'lines', segment: 'W04', shown: 'W04' },
];

/** G62 qualifiers of the expected arrival: 17 Estimated Delivery, 02 Delivery Requested, 67 Scheduled Delivery. */
const DUE_IN = new Set(['17', '02', '67']);

export function purchaseOrderFrom943(
  set: TransactionSet,
  b = new RecordBuilder(set, CARRIERS_943),
) {
  let party = '';
  let line = -1;
  let order: string | undefined;
  const w06 = set.segments.find((s) => s.id === 'W06');
  if (!w06) b.missing('W06', 'W06');
  else {
    order = b.text('identifiers.id', w06, 2);
    // W0604 shipment id: the supplier's own reference of this shipment; W0606 the purchase order.
    b.text('supplier.reference', w06, 4);
    b.text('identifiers.purchaseOrder', w06, 6);
  }
  for (const s of set.segments) {
    switch (s.id) {
      case 'N1':
        party = b.element(s, 1) ?? '';
        if (party === 'SF') {
          b.from('supplier', s);
          b.text('supplier.name', s, 2);
          b.text('supplier.id', s, 4);
        }
        break;
      case 'G62':
        if (DUE_IN.has(b.element(s, 1) ?? '')) b.date('dates.dueIn', s, 2, 4);
        break;
      case 'NTE':
        b.text('metadata.notes', s, 2);
        break;
      case 'W04': {
        line += 1;
        const at = `lines[${line}]`;
        b.from(at, s);
        if (w06 && order !== undefined) b.put(`${at}.identifiers.purchaseOrderId`, order, w06, 2);
        b.number(`${at}.quantities.advised`, s, 1);
        b.number(`${at}.quantities.ordered`, s, 1);
        b.text(`${at}.product.unitOfMeasure`, s, 2);
        if (b.element(s, 3) !== undefined) b.text(`${at}.product.skuId`, s, 3);
        productId(b, `${at}.product.skuId`, s, [4, 6]);
        break;
      }
    }
  }
  return b;
}
