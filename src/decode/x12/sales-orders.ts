import type { Segment, TransactionSet } from './envelope.js';
import { RecordBuilder } from './build.js';
import type { Carrier } from './partner-terms.js';

/**
 * 940 Warehouse Shipping Order → one v2 sales order. The table is in docs/formats-x12.md; the
 * segment layouts are ASC X12's published 004010/005010 ones (W05, N1 loop, N9, G62, NTE, W66,
 * LX loop with W01, W76). Segments not in the table are left alone.
 */
export const CARRIERS_940: readonly Carrier[] = [
  { path: 'identifiers.shipmentId', segment: 'W05', shown: 'W05' },
  { path: 'shipAddresses', segment: 'N1', shown: 'N1*ST' },
  { path: 'shipContacts', segment: 'PER', shown: 'PER' },
  { path: 'dates.dueOut', segment: 'G62', shown: 'G62*10' },
  { path: 'dates.shipment', segment: 'G62', shown: 'G62*02' },
  { path: 'shipping.carrier', segment: 'W66', shown: 'W66 (W6610)' },
  { path: 'shipmentLines', segment: 'W01', shown: 'LX/W01' },
];

/** G62 date qualifiers: 10 Requested Ship, 37 Ship Not Before, 38 Ship No Later → due out; 02 Delivery Requested, 17 Estimated Delivery → shipment. */
const DUE_OUT = new Set(['10', '37', '38']);
const SHIPMENT = new Set(['02', '17']);

/** Which product id of a W01 is the SKU: the first of these qualifiers found (SK = the warehouse's SKU). */
export const PRODUCT_QUALIFIERS = ['SK', 'VN', 'BP', 'IN', 'UP', 'UK', 'EN'] as const;

/** The product id of a W01, W04 or W12 by its qualifier pairs; `pairs` are the qualifier elements. */
export function productId(
  b: RecordBuilder,
  path: string,
  segment: Segment,
  pairs: readonly number[],
): void {
  for (const qualifier of PRODUCT_QUALIFIERS)
    for (const at of pairs)
      if (b.element(segment, at) === qualifier && b.element(segment, at + 1) !== undefined) {
        b.text(path, segment, at + 1);
        return;
      }
}

export function salesOrderFrom940(set: TransactionSet, b = new RecordBuilder(set, CARRIERS_940)) {
  let party = '';
  let customerFrom = '';
  let line = -1;
  let contacts = 0;
  let order: string | undefined;
  const w05 = set.segments.find((s) => s.id === 'W05');
  if (!w05) b.missing('W05', 'W05');
  else {
    order = b.text('identifiers.shipmentId', w05, 2);
    b.text('customer.order', w05, 3);
  }
  const withOrder = (path: string) => {
    if (w05 && order !== undefined) b.put(path, order, w05, 2);
  };
  for (const s of set.segments) {
    switch (s.id) {
      case 'N1': {
        party = b.element(s, 1) ?? '';
        if (party === 'ST') {
          b.from('shipAddresses[0]', s);
          withOrder('shipAddresses[0].shipmentId');
          b.put('shipAddresses[0].addressId', b.element(s, 4) ?? 'ST', s, b.element(s, 4) ? 4 : 1);
          b.text('shipAddresses[0].address.name', s, 2);
        }
        // The customer: the bill-to (or buyer) party, else the ship-to.
        if (party === 'BT' || party === 'BY' || (party === 'ST' && customerFrom === '')) {
          if (customerFrom !== 'BT' && customerFrom !== 'BY') {
            b.text('customer.name', s, 2);
            b.text('identifiers.customerId', s, 4);
            customerFrom = party;
          }
        }
        break;
      }
      case 'N3':
        if (party === 'ST') b.text('shipAddresses[0].address.line1', s, 1);
        break;
      case 'N4':
        if (party === 'ST') {
          b.text('shipAddresses[0].address.city', s, 1);
          b.text('shipAddresses[0].address.postcode', s, 3);
          b.text('shipAddresses[0].address.country', s, 4);
        }
        break;
      case 'PER': {
        const at = `shipContacts[${contacts}]`;
        contacts += 1;
        b.from(at, s);
        withOrder(`${at}.shipmentId`);
        b.put(`${at}.lineId`, String(contacts), s);
        const name = b.element(s, 2) ?? '';
        const space = name.lastIndexOf(' ');
        b.put(`${at}.personal.firstName`, space === -1 ? '' : name.slice(0, space), s, 2);
        b.put(`${at}.personal.lastName`, space === -1 ? name : name.slice(space + 1), s, 2);
        for (const q of [3, 5, 7]) {
          const kind = b.element(s, q);
          if (kind === 'TE') b.text(`${at}.contact.phone`, s, q + 1);
          if (kind === 'EM') b.text(`${at}.contact.email`, s, q + 1);
        }
        break;
      }
      case 'G62': {
        const qualifier = b.element(s, 1) ?? '';
        if (DUE_OUT.has(qualifier)) b.date('dates.dueOut', s, 2, 4);
        if (SHIPMENT.has(qualifier)) b.date('dates.shipment', s, 2, 4);
        break;
      }
      case 'NTE':
        b.text('order.notes', s, 2);
        break;
      case 'W66':
        b.text('shipping.carrier', s, 10);
        break;
      case 'LX':
        line += 1;
        b.from(`shipmentLines[${line}]`, s);
        b.text(`shipmentLines[${line}].line`, s, 1);
        break;
      case 'W01': {
        // A W01 without an LX before it is a line of its own (some partners send no LX).
        const previous = set.segments[set.segments.indexOf(s) - 1];
        if (line === -1 || previous?.id === 'W01') {
          line += 1;
          b.put(`shipmentLines[${line}].line`, String(line + 1), s);
        }
        const at = `shipmentLines[${line}]`;
        b.from(at, s);
        withOrder(`${at}.shipmentId`);
        b.number(`${at}.quantities.ordered`, s, 1);
        b.number(`${at}.quantities.required`, s, 1);
        b.text(`${at}.product.unitOfMeasure`, s, 2);
        if (b.element(s, 3) !== undefined) b.text(`${at}.skuId`, s, 3);
        productId(b, `${at}.skuId`, s, [4, 6, 15]);
        break;
      }
    }
  }
  return b;
}
