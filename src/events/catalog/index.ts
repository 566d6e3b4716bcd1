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
  /** Sent by this service to the operator webhook (`events.operatorWebhook`), never to a business. */
  readonly operator?: true;
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

/** The endpoint an operator event is about: its id as retry copies carry it, never its URL. */
const endpointRef = z
  .looseObject({
    id: z.string().min(1).meta({ description: 'The endpoint as retry copies name it (a hash).' }),
    kind: z.enum(['webhook', 'file']).meta({ description: 'A webhook, or an outbound folder.' }),
    host: z
      .string()
      .min(1)
      .meta({ description: "A webhook's host[:port], or the folder's store and path." }),
  })
  .meta({ description: 'The endpoint (never its URL, which may hold a token).' });

const operatorBusiness = z
  .string()
  .min(1)
  .meta({ description: 'The business whose endpoint it is.' });

/** To the operator webhook (src/events/operator.ts): an endpoint gets nothing more for now. */
const endpointDisabled = eventType({
  type: 'endpoint.disabled',
  operator: true,
  description:
    'To the operator webhook: an endpoint was disabled (it answered 410 Gone, or `events disable`); its events are dead-lettered until `events enable`.',
  data: z.looseObject({
    businessId: operatorBusiness,
    endpoint: endpointRef,
    disabledBy: z
      .enum(['gone', 'operator'])
      .meta({ description: '`gone`: it answered 410; `operator`: `events disable`.' }),
    eventId: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'The event whose attempt saw the 410, when there was one.' }),
    reason: z
      .string()
      .optional()
      .meta({ description: 'What the worker saw (`HTTP 410`) or what the operator said.' }),
  }),
  example: {
    businessId: 'ACME',
    endpoint: { id: 'a1b2c3', kind: 'webhook', host: 'erp.acme.example' },
    disabledBy: 'gone',
    eventId: 'evt-1',
    reason: 'HTTP 410',
  },
});

/** To the operator webhook: an event given up on after its last scheduled attempt. */
const attemptExhausted = eventType({
  type: 'message.attempt.exhausted',
  operator: true,
  description:
    'To the operator webhook: an event was dead-lettered after its last scheduled attempt at an endpoint failed (`events replay` sends it again).',
  data: z.looseObject({
    businessId: operatorBusiness,
    endpoint: endpointRef,
    eventId: z.string().min(1).meta({ description: 'The event given up on (its `webhook-id`).' }),
    eventType: z.string().min(1).meta({ description: 'Its type.' }),
    attempts: z.int().min(1).meta({ description: 'Attempts made at the endpoint.' }),
    lastFailure: z.string().meta({ description: 'Why the last one failed.' }),
    deadLetterQueue: z.string().min(1).meta({ description: 'Where the event waits now.' }),
  }),
  example: {
    businessId: 'ACME',
    endpoint: { id: 'a1b2c3', kind: 'webhook', host: 'erp.acme.example' },
    eventId: 'evt-1',
    eventType: 'sales-order.shipped',
    attempts: 8,
    lastFailure: 'HTTP 503: unavailable',
    deadLetterQueue: 'warehouse.events.dead',
  },
});

/** The operator webhook's event types, by name. */
export const OPERATOR_EVENT_TYPES: Readonly<Record<string, EventType>> = Object.freeze(
  Object.fromEntries(
    [endpointDisabled, attemptExhausted].map((definition) => [
      definition.type,
      definition as EventType,
    ]),
  ),
);

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

/** The whole catalog: a business's types, then the operator webhook's (docs, OpenAPI, checks). */
export const CATALOG_TYPES: Readonly<Record<string, EventType>> = Object.freeze({
  ...EVENT_TYPES,
  ...OPERATOR_EVENT_TYPES,
});

/** The catalog entry of a type; undefined for a type it does not list (incl. `__proto__`). */
export function catalogEntry(type: string): EventType | undefined {
  return Object.hasOwn(CATALOG_TYPES, type) ? CATALOG_TYPES[type] : undefined;
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
