/**
 * Where each record kind's own number is in the data of the warehouse's events about it, as the
 * catalog names the fields (index.ts): a sales order's `orderNumber` in `sales-order.*` events, …
 * The warehouse need not name the message ids it answers; the number is what every type requires.
 */
import type { KindName } from '../../records/kind.js';

export interface RecordNumberField {
  /** The kind's event types start with it, e.g. `sales-order.` */
  readonly typePrefix: string;
  /** The field of their `data` that holds the record's number. */
  readonly field: string;
}

export const RECORD_NUMBER_FIELDS: Readonly<Record<KindName, RecordNumberField>> = Object.freeze({
  'sales-orders': { typePrefix: 'sales-order.', field: 'orderNumber' },
  'purchase-orders': { typePrefix: 'purchase-order.', field: 'orderNumber' },
  'return-goods': { typePrefix: 'return-goods.', field: 'returnAuthorizationId' },
  'work-orders': { typePrefix: 'work-order.', field: 'workOrder' },
  'master-data': { typePrefix: 'master-data.', field: 'skuId' },
});
