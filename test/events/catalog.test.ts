/**
 * The event catalog (src/events/catalog/): each example is accepted by its zod schema and by the
 * JSON Schema published from it (docs/events/schemas/, checked with Ajv, a validator we did not
 * write), the body the service renders declares no field the schema lacks, and a worker counts
 * and logs (once per type) an event that breaks the catalog without holding it back.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { catalogProblem } from '../../src/cli/events/emit.js';
import {
  catalogEntry,
  checkEventData,
  EVENT_TYPES,
  OPERATOR_EVENT_TYPES,
} from '../../src/events/catalog/index.js';
import { bodyJsonSchema, exampleBody } from '../../src/events/catalog/json-schema.js';
import { createContractCheck } from '../../src/events/contract.js';
import { outboundFileContent } from '../../src/events/destinations/file/format.js';
import { warehouseEvent, type WarehouseEvent } from '../../src/events/event.js';
import { createEventsMetrics } from '../../src/events/metrics.js';
import { attemptsExhaustedMessage, endpointDisabledMessage } from '../../src/events/operator.js';
import { openApiDocument } from '../../src/http/openapi.js';
import { createLogger } from '../../src/log.js';

const ROOT = new URL('../../', import.meta.url);
const TYPES = Object.keys(EVENT_TYPES);
// Formats are a reader's hint here (zod checks the timestamp); strict mode still refuses unknown keywords.
const ajv = new Ajv2020({ allErrors: true, validateFormats: false });
const committed = (type: string) =>
  JSON.parse(readFileSync(new URL(`docs/events/schemas/${type}.json`, ROOT), 'utf8')) as Record<
    string,
    unknown
  >;
// Compiled once per type: Ajv keeps each schema under its $id.
const validators = new Map(TYPES.map((type) => [type, ajv.compile(committed(type))]));
const validator = (type: string) => validators.get(type)!;

const event = (type: string, data: Record<string, unknown>): WarehouseEvent =>
  warehouseEvent({
    id: 'evt-1',
    type,
    businessId: 'ACME',
    occurredAt: new Date('2026-11-23T16:49:01.000Z'),
    data,
  });

describe('the event catalog', () => {
  it('lists the documented types, each under its own name and of the form kind.action', () => {
    expect(TYPES).toEqual([
      'sales-order.shipped',
      'purchase-order.received',
      'return-goods.received',
      'work-order.completed',
      'master-data.rejected',
      'webhook.test',
    ]);
    for (const [name, entry] of Object.entries(EVENT_TYPES)) {
      expect(entry.type).toBe(name);
      expect(name).toMatch(/^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/);
      expect(entry.description).toMatch(/^[A-Z].*\.$/);
    }
    expect(catalogEntry('__proto__')).toBeUndefined();
    expect(catalogEntry('sales-order.shipped.late')).toBeUndefined();
  });

  it.each(TYPES)('%s: its example is accepted by its schema', (type) => {
    expect(checkEventData(type, EVENT_TYPES[type]!.example)).toEqual({ ok: true });
  });

  it('accepts fields it does not list (the producer adds fields) and names each wrong field by path', () => {
    expect(
      checkEventData('sales-order.shipped', { orderNumber: 'SO-1', carrier: 'UPS', extra: {} }),
    ).toEqual({ ok: true });
    expect(
      checkEventData('sales-order.shipped', {
        trackingNumber: 7,
        lines: [{ sku: 'A-1', qty: 1 }, { qty: -1 }],
      }),
    ).toEqual({
      ok: false,
      unknownType: false,
      issues: [
        'orderNumber: Required',
        'trackingNumber: Expected string, received number',
        'lines[1].sku: Required',
        'lines[1].qty: Expected a number >= 0',
      ],
    });
    expect(checkEventData('sales-order.cancelled', {})).toEqual({ ok: false, unknownType: true });
  });

  it('has the fixture of the README quick start as valid sales-order.shipped data', () => {
    const data = JSON.parse(
      readFileSync(new URL('fixtures/demo/sales-order-shipped.json', ROOT), 'utf8'),
    );
    expect(checkEventData('sales-order.shipped', data)).toEqual({ ok: true });
  });
});

describe('the JSON Schemas of the webhook bodies (docs/events/schemas/)', () => {
  it.each(TYPES)('%s: the committed schema is the generated one, valid draft 2020-12', (type) => {
    const schema = committed(type);
    expect(schema).toEqual({
      $id: `https://warehouse-ingest/events/${type}.schema.json`,
      ...bodyJsonSchema(EVENT_TYPES[type]!),
    });
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(ajv.validateSchema(schema), JSON.stringify(ajv.errors)).toBe(true);
  });

  it.each(TYPES)(
    '%s: accepts the example body, the body the service renders and the outbound JSON file',
    (type) => {
      const validate = validator(type);
      const example = exampleBody(EVENT_TYPES[type]!);
      expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
      expect((committed(type).examples as unknown[])[0]).toEqual(example);
      const rendered = event(type, EVENT_TYPES[type]!.example as Record<string, unknown>);
      expect(validate(JSON.parse(rendered.body)), JSON.stringify(validate.errors)).toBe(true);
      const file = JSON.parse(outboundFileContent(rendered, { path: 'out', format: 'json' }));
      expect(validate(file), JSON.stringify(validate.errors)).toBe(true);
    },
  );

  it.each(TYPES)(
    '%s: declares every field of the rendered body and refuses a wrong type or missing data',
    (type) => {
      const validate = validator(type);
      const schema = committed(type) as { properties: Record<string, unknown> };
      const body = JSON.parse(
        warehouseEvent({
          id: 'evt-2',
          type,
          businessId: 'ACME',
          occurredAt: new Date(0),
          data: EVENT_TYPES[type]!.example as Record<string, unknown>,
          correlationId: 'batch-1',
          messageIds: ['m-1'],
        }).body,
      ) as Record<string, unknown>;
      // A field webhookBody adds without the catalog would be undocumented: this fails first.
      for (const key of Object.keys(body)) expect(schema.properties, key).toHaveProperty([key]);
      expect(validate({ ...body, type: 'other.type' })).toBe(false);
      expect(validate({ ...body, data: {} })).toBe(false);
      const { data: _data, ...withoutData } = body;
      expect(validate(withoutData)).toBe(false);
    },
  );
});

describe('a worker holding events against the catalog', () => {
  function setUp() {
    const registry = new Registry();
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({
      level: 'warn',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const check = createContractCheck(createEventsMetrics(registry, ['ACME']), log);
    const count = async (type: string) =>
      (
        await registry.getSingleMetric('warehouse_ingest_event_contract_mismatches_total')!.get()
      ).values.find((v) => v.labels.type === type)?.value;
    return { check, lines, count };
  }

  it('starts every catalog type and "other" from 0', async () => {
    const { count } = setUp();
    for (const type of [...TYPES, 'other']) expect(await count(type)).toBe(0);
  });

  it('counts a type outside the catalog as "other" and bad data by its type, logging each type once', async () => {
    const { check, lines, count } = setUp();
    check(event('sales-order.shipped', { orderNumber: 'SO-1' }));
    expect(lines).toEqual([]);
    check(event('sales-order.shipped', { trackingNumber: 1 }));
    check(event('sales-order.shipped', {}));
    check(event('sales-order.cancelled', { orderNumber: 'SO-1' }));
    check(event('sales-order.cancelled', {}));
    check(event('invented.type', {}));
    expect(await count('sales-order.shipped')).toBe(2);
    expect(await count('other')).toBe(3);
    // No invented type becomes a label.
    expect(await count('sales-order.cancelled')).toBeUndefined();
    expect(lines.map((line) => [line.type, line.msg, line.issues])).toEqual([
      [
        'sales-order.shipped',
        "event data does not match its type's schema in the event catalog: delivered anyway (logged once per type)",
        ['orderNumber: Required', 'trackingNumber: Expected string, received number'],
      ],
      [
        'sales-order.cancelled',
        'event type not in the event catalog: delivered anyway (logged once per type)',
        undefined,
      ],
      [
        'invented.type',
        'event type not in the event catalog: delivered anyway (logged once per type)',
        undefined,
      ],
    ]);
  });
});

describe('events emit: what it refuses before publishing', () => {
  it('names the catalog types for an unknown type, and each wrong field for bad data', () => {
    expect(catalogProblem('sales-order.cancelled', {})).toBe(
      `unknown event type "sales-order.cancelled": the event catalog (docs/event-catalog.md) lists ${TYPES.join(', ')}`,
    );
    expect(catalogProblem('work-order.completed', { workOrder: '' })).toBe(
      'the data is not work-order.completed data (docs/event-catalog.md): workOrder: Expected at least 1 character',
    );
    expect(catalogProblem('work-order.completed', { workOrder: 'WO-1' })).toBeUndefined();
  });
});

describe('the operator event types in the catalog', () => {
  it('describe what the operator webhook is sent, are in the OpenAPI webhooks, and are never emitted for a business', () => {
    const endpoint = { id: 'e-1', kind: 'webhook', host: 'erp.example' } as const;
    const sent = [
      endpointDisabledMessage({
        businessId: 'ACME',
        endpoint,
        disabledBy: 'gone',
        eventId: 'evt-1',
        reason: 'HTTP 410',
      }),
      attemptsExhaustedMessage({
        businessId: 'ACME',
        endpoint,
        eventId: 'evt-1',
        eventType: 'sales-order.shipped',
        attempts: 3,
        lastFailure: 'HTTP 503',
        deadLetterQueue: 'q.dead',
      }),
    ];
    for (const message of sent) {
      const type = message.properties.type;
      expect(catalogEntry(type)?.operator).toBe(true);
      expect(checkEventData(type, JSON.parse(message.content.toString()))).toEqual({ ok: true });
      const schema = committed(type);
      expect(ajv.validate(schema, exampleBody(OPERATOR_EVENT_TYPES[type]!)), type).toBe(true);
      expect(catalogProblem(type, JSON.parse(message.content.toString()))).toMatch(
        /is an operator event/,
      );
    }
    const webhooks = openApiDocument().webhooks as Record<string, unknown>;
    expect(Object.keys(webhooks)).toEqual(
      expect.arrayContaining(Object.keys(OPERATOR_EVENT_TYPES)),
    );
    expect(JSON.stringify(webhooks['endpoint.disabled'])).toContain('events.operatorWebhook');
    // A business's portal filter offers its own types only.
    expect(Object.keys(EVENT_TYPES)).not.toContain('endpoint.disabled');
  });
});
