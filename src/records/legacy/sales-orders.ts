import { defineLegacyMapping } from './mapping.js';

/**
 * v1 sales orders (`oOrders` / `oOrderLines`, spec §4.3) → v2 sales orders (§2.4).
 * What the legacy shape lacks (site, warehouse, owner, class, shipping, currency, customer,
 * addresses, contacts) comes from the business's onboarding profile.
 */
export const salesOrdersV1 = defineLegacyMapping({
  kind: 'sales-orders',
  root: 'oOrders',
  groupBy: 'OrdNumber',
  header: [
    { legacy: 'AccountID', type: 'string', to: ['identifiers.businessId'] },
    // The legacy order number is both the order id and the reference the business knows it by.
    {
      legacy: 'OrdNumber',
      type: 'string',
      to: [
        'identifiers.shipmentId',
        'order.customerRef',
        'shipAddresses[].shipmentId',
        'shipContacts[].shipmentId',
      ],
    },
    // The legacy system had one date: the order ships the day it is due out.
    { legacy: 'DueOutDate', type: 'date', to: ['dates.dueOut', 'dates.shipment'] },
  ],
  lines: {
    legacy: 'oOrderLines',
    v2: 'shipmentLines',
    fromHeader: [{ legacy: 'OrdNumber', to: ['shipmentId'] }],
    fields: [
      { legacy: 'LineNumber', type: 'number', to: ['line'], asString: true },
      { legacy: 'ProductID', type: 'string', to: ['skuId'] },
      // One legacy quantity: what is ordered is what is required.
      { legacy: 'Qty', type: 'number', to: ['quantities.ordered', 'quantities.required'] },
      { legacy: 'UoM', type: 'string', to: ['product.unitOfMeasure'] },
      { legacy: 'SalesUnitPrice', type: 'number', to: ['financial.price'] },
    ],
  },
  derived: ['financial.lineValue'],
  derive(record) {
    // The order value is the sum of its lines (Qty × SalesUnitPrice), when every line has both.
    const lines = record.shipmentLines;
    if (!Array.isArray(lines) || lines.length === 0) return;
    let total = 0;
    for (const line of lines) {
      // A line may be anything the sender put in the array (null, a number): v2 validation words that.
      const qty = (line as { quantities?: { ordered?: unknown } } | null | undefined)?.quantities
        ?.ordered;
      const price = (line as { financial?: { price?: unknown } } | null | undefined)?.financial
        ?.price;
      if (typeof qty !== 'number' || typeof price !== 'number') return;
      total += qty * price;
    }
    const financial = (record.financial ??= {}) as Record<string, unknown>;
    if (financial.lineValue === undefined) financial.lineValue = Math.round(total * 1e6) / 1e6;
  },
});
