/**
 * The v1 (legacy) converters, one per kind: the same tables serve the v1 HTTP endpoints and
 * the v1-json / v1-csv file drops.
 */
import type { KindName } from '../kind.js';
import type { LegacyConverter } from './converter.js';
import { masterDataV1 } from './master-data.js';
import { purchaseOrdersV1 } from './purchase-orders.js';
import { returnGoodsV1 } from './return-goods.js';
import { salesOrdersV1 } from './sales-orders.js';
import { workOrdersV1 } from './work-orders.js';

export const LEGACY: Readonly<Partial<Record<KindName, LegacyConverter>>> = Object.freeze({
  'master-data': masterDataV1,
  'sales-orders': salesOrdersV1,
  'purchase-orders': purchaseOrdersV1,
  'return-goods': returnGoodsV1,
  'work-orders': workOrdersV1,
});

export { LEGACY_DATE_FORMS, legacyDateToUtc } from './dates.js';
export type {
  ConversionContext,
  LegacyConverter,
  LegacyMapping,
  LegacyProblem,
} from './converter.js';
export { IgnoredFields } from './ignored-fields.js';
export {
  conversionContext,
  FALLBACK_PROFILE,
  profileFor,
  type LegacyOptions,
  type OnboardingProfiles,
  type ProfilesSource,
} from './onboarding.js';
export type { SenderTerms } from './sender-terms.js';
