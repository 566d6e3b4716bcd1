import { defineLegacyMapping } from './mapping.js';

/**
 * v1 purchase orders (`iOrders` / `iOrderLines`, spec §4.3) → v2 purchase orders (§2.5).
 * The legacy shape names site, owner and class itself; what it lacks (supplier, warehouse,
 * receipt lane, unit of measure) comes from the business's onboarding profile.
 */
export const purchaseOrdersV1 = defineLegacyMapping({
  kind: 'purchase-orders',
  root: 'iOrders',
  groupBy: 'OrdNumber',
  header: [
    { legacy: 'AccountID', type: 'string', to: ['identifiers.businessId'] },
    // The one order number is the lead id, the business's PO reference, and the PO number the
    // supplier knows (v2 requires `supplier.reference`; the legacy shape has no other candidate).
    {
      legacy: 'OrdNumber',
      type: 'string',
      to: ['identifiers.id', 'identifiers.purchaseOrder', 'supplier.reference'],
    },
    { legacy: 'LocationID', type: 'string', to: ['location.site'] },
    // A stock pool is the stock's owner in the legacy warehouse system.
    { legacy: 'StockPool', type: 'string', to: ['location.ownerId'] },
    // Accepted, not forwarded: `order.type` is set by the platform (§2.5), any sent value is ignored.
    { legacy: 'OrdType', type: 'string', to: [] },
    // No v2 field is listed for it; passed through (v2 objects are loose) rather than lost.
    { legacy: 'ReqType', type: 'string', to: ['order.requestType'] },
    { legacy: 'Class', type: 'string', to: ['order.class'] },
    // The expected delivery date is the date the stock is due in.
    { legacy: 'ExpDelDate', type: 'date', to: ['dates.dueIn'] },
  ],
  lines: {
    legacy: 'iOrderLines',
    v2: 'lines',
    fromHeader: [{ legacy: 'OrdNumber', to: ['identifiers.purchaseOrderId'] }],
    fields: [
      // v2 lists no line number for purchase order lines; kept under the name the RGA lines use.
      { legacy: 'LineNumber', type: 'number', to: ['identifiers.lineNumber'], asString: true },
      { legacy: 'ProductID', type: 'string', to: ['product.skuId'] },
      // One legacy quantity: what is announced (advised) is what was ordered.
      { legacy: 'Qty', type: 'number', to: ['quantities.advised', 'quantities.ordered'] },
    ],
  },
});
