/** Purchase orders (goods in, announcing inbound stock), spec §2.5. */
import { z } from 'zod';
import type { RecordKind } from './kind.js';
import { id, nonEmptyArray, obj, quantity, text, timestamp } from './fields.js';

const line = obj({
  identifiers: obj({ purchaseOrderId: text }),
  product: obj({ skuId: text, unitOfMeasure: text }),
  quantities: obj({ advised: quantity, ordered: quantity }),
  // Sets a non-default line-level stock status.
  location: obj({ stockStatus: text.optional() }).optional(),
});

export const purchaseOrderSchema = obj({
  identifiers: obj({
    id,
    businessId: id,
    businessOrderNumber: text.optional(),
    purchaseOrder: text.optional(),
  }),
  supplier: obj({
    id: text,
    reference: text,
    name: text.optional(),
    orderNumber: text.optional(),
  }),
  // `order.type` is set by the platform: not declared, so any value passes the parse, and
  // `platformFields` removes it from the validated record.
  order: obj({ class: text }),
  location: obj({ site: text, warehouse: text, ownerId: text, receiptLane: text }),
  dates: obj({ dueIn: timestamp }),
  metadata: obj({ notes: text.optional() }).optional(),
  lines: nonEmptyArray(line),
});

export type PurchaseOrder = z.infer<typeof purchaseOrderSchema>;

export const purchaseOrders: RecordKind<typeof purchaseOrderSchema> = {
  name: 'purchase-orders',
  label: 'purchase order',
  // zod's JIT for this schema only: ~2x faster on valid records, and unlike a global
  // `import 'zod/compile'` it changes nothing for other zod users in the process.
  schema: z.compile(purchaseOrderSchema),
  businessIdPath: ['identifiers', 'businessId'],
  referencePath: ['identifiers', 'id'],
  platformFields: [['order', 'type']],
};
