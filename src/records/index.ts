/**
 * The kind table: the one place that lists the five record kinds. Everything that needs
 * "the kind for this URL / pipeline" looks it up here, so adding a kind is one module plus one line.
 */
import { KIND_NAMES, type KindName, type RecordKind } from './kind.js';
import { masterData } from './master-data.js';
import { purchaseOrders } from './purchase-orders.js';
import { returnGoods } from './return-goods.js';
import { salesOrders } from './sales-orders.js';
import { workOrders } from './work-orders.js';

export const KINDS: Readonly<Record<KindName, RecordKind>> = Object.freeze({
  'master-data': masterData,
  'sales-orders': salesOrders,
  'purchase-orders': purchaseOrders,
  'return-goods': returnGoods,
  'work-orders': workOrders,
});

/** The kind for a URL segment or pipeline `kind:` value; undefined for anything else (incl. `__proto__`). */
export function kindByName(name: string): RecordKind | undefined {
  return Object.hasOwn(KINDS, name) ? KINDS[name as KindName] : undefined;
}

export { KIND_NAMES, type KindName, type RecordKind };
export { masterData, masterDataSchema, type MasterData } from './master-data.js';
export { salesOrders, salesOrderSchema, type SalesOrder } from './sales-orders.js';
export { purchaseOrders, purchaseOrderSchema, type PurchaseOrder } from './purchase-orders.js';
export { returnGoods, returnGoodsSchema, type ReturnGoods } from './return-goods.js';
export { workOrders, workOrderSchema, type WorkOrder, LINE_ROLES } from './work-orders.js';
export { issueMessage, formatIssues, formatPath, PARSE_OPTIONS } from './issues.js';
export { validateRecord, type ValidationResult } from './validate.js';
