/** Master data (products), spec §2.3. A record is `{ product: { ... } }`. */
import { z } from 'zod';
import type { RecordKind } from './kind.js';
import { id, num, obj, text } from './fields.js';

/** Height, width, depth and weight of a box or an item; used to pick, pack and rate. */
const measures = obj({ height: num, width: num, depth: num, weight: num });

const alternative = obj({
  barcode: text,
  // "two-character code" (10 retailer/EAN, 08 inner pack, 09 outer pack).
  type: z.string().length(2),
  reference: text,
});

export const masterDataSchema = obj({
  product: obj({
    identifiers: obj({
      skuId: id,
      businessId: id,
      customerId: text.optional(),
      // "mandatory core attribute": required; carried to shipping documents unchanged.
      nmfcCode: text,
    }),
    information: obj({
      description: id,
      // "mandatory core attribute": needed for customs on export orders.
      countryOfOrigin: text,
      status: text.optional(),
      text: text.optional(),
      categories: z.array(text).optional(),
      cost: num.optional(),
    }),
    // Plain "core attribute": optional, type-checked when present.
    classification: obj({ groups: z.array(text).optional() }).optional(),
    // The empty string is meaningful here (non-hazardous), so no min length.
    quality: obj({ hazardCode: text.optional() }).optional(),
    alternatives: z.array(alternative).optional(),
    // Flags are strings ("1" switches one on), not booleans: that is the wire format.
    lifecycle: obj({
      batchRequired: text.optional(),
      expiryRequired: text.optional(),
      productionRequired: text.optional(),
      serialRequired: text.optional(),
      life: num.optional(),
      rotationMethod: text.optional(),
    }).optional(),
    dimensions: obj({ box: measures.optional(), item: measures.optional() }).optional(),
    customisations: z.array(obj({ key: text, value: text })).optional(),
  }),
});

export type MasterData = z.infer<typeof masterDataSchema>;

export const masterData: RecordKind<typeof masterDataSchema> = {
  name: 'master-data',
  label: 'master data record',
  // zod's JIT for this schema only: ~2x faster on valid records, and unlike a global
  // `import 'zod/compile'` it changes nothing for other zod users in the process.
  schema: z.compile(masterDataSchema),
  businessIdPath: ['product', 'identifiers', 'businessId'],
  referencePath: ['product', 'identifiers', 'skuId'],
  platformFields: [],
};
