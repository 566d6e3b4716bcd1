import { defineLegacyMapping } from './mapping.js';

/**
 * v1 products (`Products`, spec §4.3) → v2 master data records (§2.3), one per product: the
 * legacy shape has no lines, so no `groupBy` and a CSV file has one row per product. The
 * mandatory core attributes the legacy shape lacks (freight class, country of origin) come
 * from the business's onboarding profile.
 */
export const masterDataV1 = defineLegacyMapping({
  kind: 'master-data',
  root: 'Products',
  header: [
    { legacy: 'ProductID', type: 'string', to: ['product.identifiers.skuId'] },
    { legacy: 'AccountID', type: 'string', to: ['product.identifiers.businessId'] },
    { legacy: 'ShortDesc', type: 'string', to: ['product.information.description'] },
    { legacy: 'LongDesc', type: 'string', to: ['product.information.text'] },
    // v2 lists no unit of measure for a product; passed through (v2 objects are loose) so the
    // catalogue keeps the unit the order lines are counted in.
    { legacy: 'UoM', type: 'string', to: ['product.information.unitOfMeasure'] },
  ],
});
