/**
 * The event catalog: the one place that lists the event types the warehouse sends back and what
 * each one's `data` holds. The OpenAPI `webhooks`, the JSON Schemas under docs/events/schemas/,
 * docs/event-catalog.md and `events emit`'s check are all made from this table.
 *
 * The warehouse produces the events; the catalog is the contract connector developers write
 * against. Objects are loose: a field not listed may appear (the producer adds fields without a
 * new version), and receivers ignore what they do not know.
 */
import { z } from 'zod';
import { formatIssues, PARSE_OPTIONS } from '../../records/issues.js';

export interface EventType<Data extends z.ZodType = z.ZodType> {
  /** `kind.action`: the AMQP `type`, the routing key's start, the webhook body's `type`. */
  readonly type: string;
  /** One line: what happened when this event is sent. */
  readonly description: string;
  /** The schema of the event's `data` object. */
  readonly data: Data;
  /** A `data` the schema accepts: shown in the docs and the OpenAPI document, checked by the tests. */
  readonly example: z.input<Data>;
}

const reference = (what: string) =>
  z
    .string()
    .min(1)
    .meta({ description: `The ${what}'s number, as the business sent it.` });

/** What moved: one entry per SKU. */
const lines = z
  .array(
    z.looseObject({
      sku: z.string().min(1).meta({ description: 'The SKU (`skuId` of its master data).' }),
      qty: z
        .number()
        .min(0)
        .meta({ description: 'The quantity, in the unit of measure of the line.' }),
    }),
  )
  .optional()
  .meta({
    description: 'What moved, one entry per SKU; absent when the warehouse sends no lines.',
  });

function eventType<Data extends z.ZodType>(definition: EventType<Data>): EventType<Data> {
  return Object.freeze(definition);
}

const salesOrderShipped = eventType({
  type: 'sales-order.shipped',
  description: 'A sales order left the warehouse.',
  data: z.looseObject({
    orderNumber: reference('sales order'),
    trackingNumber: z
      .string()
      .min(1)
      .optional()
      .meta({ description: "The carrier's tracking number, when the carrier gave one." }),
    lines,
  }),
  example: {
    orderNumber: 'SO-1',
    trackingNumber: '1Z999AA10123456784',
    lines: [{ sku: 'A-1', qty: 2 }],
  },
});

const purchaseOrderReceived = eventType({
  type: 'purchase-order.received',
  description: "Goods of a purchase order were received into the warehouse's stock.",
  data: z.looseObject({ orderNumber: reference('purchase order'), lines }),
  example: { orderNumber: 'PO-9', lines: [{ sku: 'A-1', qty: 40 }] },
});

const returnGoodsReceived = eventType({
  type: 'return-goods.received',
  description: 'Goods of a return goods authorisation came back into the warehouse.',
  data: z.looseObject({ returnAuthorizationId: reference('return authorization'), lines }),
  example: { returnAuthorizationId: 'RGA-3', lines: [{ sku: 'A-1', qty: 1 }] },
});

const workOrderCompleted = eventType({
  type: 'work-order.completed',
  description: 'A work order (kitting, assembly) was completed.',
  data: z.looseObject({ workOrder: reference('work order') }),
  example: { workOrder: 'WO-1' },
});

const masterDataRejected = eventType({
  type: 'master-data.rejected',
  description: 'The warehouse refused a master data record (a product) it had been sent.',
  data: z.looseObject({
    skuId: z
      .string()
      .min(1)
      .meta({ description: 'The product refused: `product.identifiers.skuId` of the record.' }),
    reason: z.string().min(1).meta({ description: 'Why, for a person to read.' }),
  }),
  example: { skuId: 'A-1', reason: 'Unknown unit of measure "BX"' },
});

/**
 * Sent by this service, never by the warehouse: what a business asks for to try its endpoint
 * (`POST /api/v2/webhooks/{id}/test`), signed and delivered like every other event.
 */
export const webhookTest = eventType({
  type: 'webhook.test',
  description:
    'A test, sent by this service when the business asks for one (`POST /api/v2/webhooks/{id}/test`): it changes nothing.',
  data: z.looseObject({
    endpoint: z.string().min(1).meta({ description: 'The endpoint tested: its id.' }),
    message: z.string().min(1).meta({ description: 'A line for a person reading the log.' }),
  }),
  example: { endpoint: 'erp-connector', message: 'A test event from warehouse-ingest.' },
});

/** Every event type a business's endpoints receive, by name: the warehouse's, and the test. */
export const EVENT_TYPES: Readonly<Record<string, EventType>> = Object.freeze(
  Object.fromEntries(
    [
      salesOrderShipped,
      purchaseOrderReceived,
      returnGoodsReceived,
      workOrderCompleted,
      masterDataRejected,
      webhookTest,
    ].map((definition) => [definition.type, definition as EventType]),
  ),
);

/** The catalog entry of a type; undefined for a type it does not list (incl. `__proto__`). */
export function catalogEntry(type: string): EventType | undefined {
  return Object.hasOwn(EVENT_TYPES, type) ? EVENT_TYPES[type] : undefined;
}

export type DataCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly unknownType: true }
  | { readonly ok: false; readonly unknownType: false; readonly issues: readonly string[] };

/**
 * Whether an event's `data` is what the catalog says for its type: issues as `<path>: <message>`
 * with the records' wording (`orderNumber: Required`).
 */
export function checkEventData(type: string, data: unknown): DataCheck {
  const entry = catalogEntry(type);
  if (!entry) return { ok: false, unknownType: true };
  const parsed = entry.data.safeParse(data, PARSE_OPTIONS);
  if (parsed.success) return { ok: true };
  return { ok: false, unknownType: false, issues: formatIssues(parsed.error.issues) };
}
