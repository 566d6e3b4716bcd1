/**
 * The notes of the interface description (docs/interface.md §2.3-2.7, copied) as descriptions of
 * the record fields in /openapi.json: what a field means, beside the type and the required flag the
 * zod schema gives. Keyed by kind and dotted path (arrays by their own name).
 */
export const FIELD_NOTES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'master-data': {
    'product.identifiers.skuId': 'Primary SKU code. Order lines refer to it.',
    'product.identifiers.businessId': 'Must equal the authenticated business id.',
    'product.identifiers.customerId': 'End-customer account the product belongs to.',
    'product.identifiers.nmfcCode':
      'Freight class for shipping paperwork and carrier rating. Not validated against a lookup. Carried through to shipping documents unchanged.',
    'product.information.description':
      'Short description. Shown on pick screens, labels and delivery paperwork.',
    'product.information.countryOfOrigin':
      'ISO 3166 country code. Needed for customs on export orders.',
    'product.information.status': "Lifecycle status in the business's catalogue.",
    'product.information.text': 'Longer description.',
    'product.information.categories': 'Free-form labels.',
    'product.information.cost': 'Unit cost, used for insurance and customs valuation.',
    'product.classification.groups': 'Group labels.',
    'product.quality.hazardCode':
      'Empty string for a non-hazardous product. A hazard classification code otherwise.',
    'product.alternatives':
      'Extra barcodes for the same SKU. Each has `barcode` (string), `type` (string, two-character code) and `reference` (string).',
    'product.lifecycle.batchRequired': 'Tracking flags. The value `"1"` switches a flag on.',
    'product.lifecycle.expiryRequired': 'Tracking flags. The value `"1"` switches a flag on.',
    'product.lifecycle.productionRequired': 'Tracking flags. The value `"1"` switches a flag on.',
    'product.lifecycle.serialRequired': 'Tracking flags. The value `"1"` switches a flag on.',
    'product.lifecycle.life': 'Shelf life. Unit not stated.',
    'product.lifecycle.rotationMethod':
      'Stock rotation method code. Set together with `expiryRequired` so that expiry is read at pick.',
    'product.dimensions.box':
      'Each has `height`, `width`, `depth` and `weight`, all number. Used by the warehouse to pick, pack and rate.',
    'product.dimensions.item':
      'Each has `height`, `width`, `depth` and `weight`, all number. Used by the warehouse to pick, pack and rate.',
    'product.customisations':
      'Free-form header customisations. Each has `key` and `value`, both string. A product may have several.',
  },
  'sales-orders': {
    'identifiers.shipmentId': 'Order id.',
    'identifiers.businessId': 'Must equal the authenticated business id.',
    'order.notes': 'Delivery or packing instructions. Distinct from customisations.',
    'customer.group':
      'Customer group. It decides which stock qualifies (group-based stock attribution).',
    'customer.order': "Customer's own purchase order, a secondary reference.",
    'financial.currency': 'Currency code.',
    'financial.dutyPaid':
      '`true` for a duty-paid export order (duty and taxes settled by the sender).',
    shipAddresses:
      'Each has `table` (string), `shipmentId`, `addressId` (string) and `address` with `name`, `line1`, `city`, `postcode`, `country` (all string).',
    shipContacts:
      'Each has `table`, `shipmentId`, `lineId` (string), `personal.firstName`, `personal.lastName`, `contact.email`, `contact.phone` (string).',
    customisations:
      'Header-level value-added service instructions. Each has `name` and `value` (string). The name `PRODDETAIL` carries the customs goods description for export paperwork.',
    shipmentLines:
      'Each has `shipmentId`, `line`, `skuId` (string), `product.unitOfMeasure` (string), `quantities.ordered` and `quantities.required` (number), `financial.price` (number). Optional per-line `customisations[]` has the same shape as the header ones and holds line-level instructions.',
  },
  'purchase-orders': {
    'identifiers.id': 'Lead order id.',
    'identifiers.businessId': 'Must equal the authenticated business id.',
    'identifiers.businessOrderNumber': 'Additional references.',
    'identifiers.purchaseOrder': 'Additional references.',
    'metadata.notes': 'Free-text header note.',
    lines:
      'Each has `identifiers.purchaseOrderId` (string), `product.skuId` (string), `product.unitOfMeasure` (string), `quantities.advised` and `quantities.ordered` (number). Optional `location.stockStatus` (string) sets a non-default line-level stock status.',
  },
  'return-goods': {
    'identifiers.businessId': 'Must equal the authenticated business id.',
    'identifiers.customerId': 'Holds the returns supplier id assigned at onboarding.',
    'quality.returnReason': 'Return reason code.',
    'metadata.notes': 'Free-text header note.',
    lines:
      'Each has `identifiers.returnAuthorizationId`, `.lineNumber`, `.skuId`, `.businessSkuId` (string), `product.unitOfMeasure` (string), `quantities.ordered` and `quantities.advised` (number), `dates.receipt` (timestamp), `quality.returnReason` (string). Optional `location.owner` and `location.stockStatus` (string) set a non-default stock status.',
  },
  'work-orders': {
    'identifiers.id': '`businessId` must equal the authenticated business id.',
    'identifiers.businessId': '`businessId` must equal the authenticated business id.',
    'identifiers.customerId': '`businessId` must equal the authenticated business id.',
    'workOrder.type': 'Kind of work, e.g. kitting.',
    lines:
      'Each has `workOrderId`, `line`, `skuId` (string) and `role` (string). The values `finished_good` and `component` are used. `quantities.ordered` (number) is set on a finished good line. `quantities.required` (number) is set on a component line.',
  },
};
