/** Return goods authorisations (goods coming back from customers), spec §2.6. */
import { z } from 'zod';
import type { RecordKind } from './kind.js';
import { id, nonEmptyArray, obj, quantity, text, timestamp } from './fields.js';

const line = obj({
  identifiers: obj({
    returnAuthorizationId: text,
    lineNumber: text,
    skuId: text,
    businessSkuId: text,
  }),
  product: obj({ unitOfMeasure: text }),
  quantities: obj({ ordered: quantity, advised: quantity }),
  dates: obj({ receipt: timestamp }),
  quality: obj({ returnReason: text }),
  // Together these set a non-default stock status.
  location: obj({ owner: text.optional(), stockStatus: text.optional() }).optional(),
});

export const returnGoodsSchema = obj({
  identifiers: obj({
    id,
    businessId: id,
    // Holds the returns supplier id assigned at onboarding.
    customerId: text,
    businessRgaNumber: text,
    originalPurchaseOrder: text.optional(),
  }),
  customer: obj({ reference: text.optional() }).optional(),
  // `order.type` is set by the platform: not declared, so any value passes the parse, and
  // `platformFields` removes it from the validated record.
  order: obj({ class: text }),
  location: obj({ site: text, warehouse: text, ownerId: text, receiptLane: text }),
  dates: obj({ dueIn: timestamp, receipt: timestamp }),
  quality: obj({ returnReason: text }),
  metadata: obj({ notes: text.optional() }).optional(),
  lines: nonEmptyArray(line),
});

export type ReturnGoods = z.infer<typeof returnGoodsSchema>;

export const returnGoods: RecordKind<typeof returnGoodsSchema> = {
  name: 'return-goods',
  label: 'return goods authorisation',
  // zod's JIT for this schema only: ~2x faster on valid records, and unlike a global
  // `import 'zod/compile'` it changes nothing for other zod users in the process.
  schema: z.compile(returnGoodsSchema),
  businessIdPath: ['identifiers', 'businessId'],
  referencePath: ['identifiers', 'id'],
  platformFields: [['order', 'type']],
};
