/** Sales orders (goods out), spec §2.4. Fields marked M are required, the rest optional. */
import { z } from 'zod';
import type { RecordKind } from './kind.js';
import { id, nameValue, nonEmptyArray, num, obj, quantity, text, timestamp } from './fields.js';

const shipAddress = obj({
  table: text,
  shipmentId: text,
  addressId: text,
  address: obj({ name: text, line1: text, city: text, postcode: text, country: text }),
});

const shipContact = obj({
  table: text,
  shipmentId: text,
  lineId: text,
  personal: obj({ firstName: text, lastName: text }),
  contact: obj({ email: text, phone: text }),
});

const shipmentLine = obj({
  shipmentId: text,
  line: text,
  skuId: text,
  product: obj({ unitOfMeasure: text }),
  quantities: obj({ ordered: quantity, required: quantity }),
  financial: obj({ price: num }),
  // Line-level instructions; same shape as the header ones.
  customisations: z.array(nameValue).optional(),
});

export const salesOrderSchema = obj({
  identifiers: obj({
    shipmentId: id,
    businessId: id,
    customerId: text,
    site: text,
    warehouse: text,
    ownerId: text,
  }),
  order: obj({ class: text, customerRef: text, notes: text.optional() }),
  customer: obj({ name: text, group: text.optional(), order: text.optional() }),
  shipping: obj({ method: text, route: text, carrier: text, shippingLane: text }),
  financial: obj({ currency: text, lineValue: num, dutyPaid: z.boolean().optional() }),
  dates: obj({ dueOut: timestamp, shipment: timestamp }),
  shipAddresses: nonEmptyArray(shipAddress),
  shipContacts: nonEmptyArray(shipContact),
  // Header-level instructions; `PRODDETAIL` carries the customs goods description.
  customisations: z.array(nameValue).optional(),
  shipmentLines: nonEmptyArray(shipmentLine),
});

export type SalesOrder = z.infer<typeof salesOrderSchema>;

export const salesOrders: RecordKind<typeof salesOrderSchema> = {
  name: 'sales-orders',
  label: 'sales order',
  // zod's JIT for this schema only: ~2x faster on valid records, and unlike a global
  // `import 'zod/compile'` it changes nothing for other zod users in the process.
  schema: z.compile(salesOrderSchema),
  businessIdPath: ['identifiers', 'businessId'],
  referencePath: ['identifiers', 'shipmentId'],
  platformFields: [],
};
