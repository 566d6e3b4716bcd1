import { defineLegacyMapping } from './mapping.js';

/**
 * v1 returns (`rOrders` / `rOrderLines`, spec §4.3) → v2 return goods authorisations (§2.6).
 * What the legacy shape lacks (the return supplier, warehouse, receipt lane, unit of measure)
 * comes from the business's onboarding profile; it has no dates at all (see `receivedAt`).
 */
export const returnGoodsV1 = defineLegacyMapping({
  kind: 'return-goods',
  root: 'rOrders',
  groupBy: 'OrdNumber',
  header: [
    { legacy: 'AccountID', type: 'string', to: ['identifiers.businessId'] },
    { legacy: 'OrdNumber', type: 'string', to: ['identifiers.id'] },
    // The returns platform's reference is the RGA number the business tracks the return by.
    { legacy: 'PlatformRef', type: 'string', to: ['identifiers.businessRgaNumber'] },
    // The customer's own reference for the return (optional in v2).
    { legacy: 'OrdRef1', type: 'string', to: ['customer.reference'] },
    { legacy: 'LocationID', type: 'string', to: ['location.site'] },
    // A stock pool is the stock's owner in the legacy warehouse system.
    { legacy: 'StockPool', type: 'string', to: ['location.ownerId'] },
    // Accepted, not forwarded: `order.type` is set by the platform (§2.6), any sent value is ignored.
    { legacy: 'OrdType', type: 'string', to: [] },
    // No v2 field is listed for it; passed through (v2 objects are loose) rather than lost.
    { legacy: 'ReqType', type: 'string', to: ['order.requestType'] },
    { legacy: 'Class', type: 'string', to: ['order.class'] },
  ],
  lines: {
    legacy: 'rOrderLines',
    v2: 'lines',
    fromHeader: [{ legacy: 'OrdNumber', to: ['identifiers.returnAuthorizationId'] }],
    fields: [
      { legacy: 'LineNumber', type: 'number', to: ['identifiers.lineNumber'], asString: true },
      // The legacy system knew one product code: the SKU is the business's own SKU.
      {
        legacy: 'ProductID',
        type: 'string',
        to: ['identifiers.skuId', 'identifiers.businessSkuId'],
      },
      // One legacy quantity: what is authorised (ordered) is what is expected back (advised).
      { legacy: 'Qty', type: 'number', to: ['quantities.ordered', 'quantities.advised'] },
      { legacy: 'Reason', type: 'string', to: ['quality.returnReason'] },
    ],
  },
  // The legacy shape has no dates, but v2 requires them: the return is due, and received, from
  // the moment the batch arrived (the warehouse records the actual receipt when goods come in).
  receivedAt: ['dates.dueIn', 'dates.receipt', 'lines[].dates.receipt'],
  derived: ['quality.returnReason'],
  derive(record) {
    // v2 wants one reason for the whole return; the legacy shape has one per line. The first
    // line's reason stands for the return (each line still carries its own).
    // `quality` is created even without a reason, so v2 reports the derived path itself
    // (`quality.returnReason`), which the sender's error list leaves out in favour of the
    // line's own error, rather than `quality`, which no legacy field would explain.
    const quality = (record.quality ??= {}) as Record<string, unknown>;
    const lines = record.lines;
    const first = Array.isArray(lines)
      ? (lines[0] as { quality?: { returnReason?: unknown } } | undefined)
      : undefined;
    const reason = first?.quality?.returnReason;
    if (typeof reason === 'string' && quality.returnReason === undefined)
      quality.returnReason = reason;
  },
});
