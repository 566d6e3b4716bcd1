import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACME,
  OTHER,
  answer,
  basicAuth,
  createTestApp,
  type TestApp,
} from '../support/http-app.js';

const PROFILE = `
onboarding:
  ACME:
    sales-orders:
      identifiers.customerId: CUST-ACME
      identifiers.site: UK01
      identifiers.warehouse: WH-MAN
      identifiers.ownerId: ACME
      order.class: B2C
      customer.name: Acme Stores
      shipping.method: STANDARD
      shipping.route: NW-03
      shipping.carrier: DPD
      shipping.shippingLane: LANE-2
      financial.currency: GBP
      shipAddresses:
        - { table: SHIPTO, addressId: A1, address: { name: Acme Store 1, line1: 1 High St, city: Leeds, postcode: LS1 1AA, country: GB } }
      shipContacts:
        - { table: CONTACT, lineId: C1, personal: { firstName: Ann, lastName: Lee }, contact: { email: ann@example.com, phone: "+44 113 000" } }
`;

const legacyOrders = {
  oOrders: [
    {
      AccountID: 'ACME',
      OrdNumber: 'SO-1',
      DueOutDate: '2026-02-03',
      oOrderLines: [
        { LineNumber: 1, ProductID: 'SKU-1', Qty: 2, UoM: 'EA', SalesUnitPrice: 9.99 },
        { LineNumber: 2, ProductID: 'SKU-2', Qty: 1, UoM: 'EA', SalesUnitPrice: 4.5 },
      ],
    },
    {
      AccountID: 'ACME',
      OrdNumber: 'SO-2',
      DueOutDate: '2026-02-04T10:30:00+01:00',
      oOrderLines: [{ LineNumber: 1, ProductID: 'SKU-9', Qty: 5, UoM: 'BOX', SalesUnitPrice: 12 }],
    },
  ],
};

const legacyCsv = [
  'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice',
  'ACME,SO-1,2026-02-03,1,SKU-1,2,EA,9.99',
  'ACME,SO-1,2026-02-03,2,SKU-2,1,EA,4.50',
  'ACME,SO-2,2026-02-04T10:30:00+01:00,1,SKU-9,5,BOX,12',
].join('\r\n');

const csv = (body: string, extra: Record<string, string> = {}) => ({
  raw: body,
  headers: { 'content-type': 'text/csv; charset=utf-8', ...extra },
});

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ yaml: PROFILE });
});
afterAll(() => t.close());

describe('POST /api/v1/sales-orders', () => {
  it('converts legacy JSON with the onboarding profile, answers 202 with deprecation signals, publishes v2 records', async () => {
    const response = await t.post('/api/v1/sales-orders', legacyOrders);
    expect(response.status).toBe(202);
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(response.headers.get('link')).toBe('</api/v2/sales-orders>; rel="successor-version"');
    const body = await answer(response);
    expect(body.recordCount).toBe(2);

    const messages = await t.topology.messages();
    expect(messages.map((m) => m.routingKey)).toEqual(['sales-orders.ACME', 'sales-orders.ACME']);
    expect(messages.map((m) => m.properties.messageId)).toEqual(body.messageIds);
    expect(messages[0]!.content).toMatchObject({
      identifiers: {
        shipmentId: 'SO-1',
        businessId: 'ACME',
        customerId: 'CUST-ACME',
        site: 'UK01',
      },
      order: { class: 'B2C', customerRef: 'SO-1' },
      financial: { currency: 'GBP', lineValue: 24.48 },
      dates: { dueOut: '2026-02-03T00:00:00Z', shipment: '2026-02-03T00:00:00Z' },
      shipAddresses: [{ shipmentId: 'SO-1', addressId: 'A1' }],
      shipContacts: [{ shipmentId: 'SO-1', lineId: 'C1' }],
      shipmentLines: [
        {
          shipmentId: 'SO-1',
          line: '1',
          skuId: 'SKU-1',
          product: { unitOfMeasure: 'EA' },
          quantities: { ordered: 2, required: 2 },
          financial: { price: 9.99 },
        },
        { shipmentId: 'SO-1', line: '2', skuId: 'SKU-2', quantities: { ordered: 1, required: 1 } },
      ],
    });
    expect(messages[1]!.content).toMatchObject({ dates: { dueOut: '2026-02-04T09:30:00Z' } });
  });

  it('converts the same orders sent as CSV to the same records, with the same message ids', async () => {
    const json = await answer(await t.post('/api/v1/sales-orders', legacyOrders));
    const fromJson = await t.topology.messages();
    const response = await t.post('/api/v1/sales-orders', undefined, csv(`\uFEFF${legacyCsv}\r\n`));
    expect(response.status).toBe(202);
    const body = await answer(response);
    expect(body.recordCount).toBe(2);
    expect(body.messageIds).toEqual(json.messageIds);
    expect((await t.topology.messages()).map((m) => m.content)).toEqual(
      fromJson.map((m) => m.content),
    );
  });

  it('points legacy JSON errors at the legacy path, and publishes nothing', async () => {
    const broken = structuredClone(legacyOrders) as { oOrders: Array<Record<string, unknown>> };
    (broken.oOrders[0]!.oOrderLines as Array<Record<string, unknown>>)[1]!.Qty = '12';
    delete broken.oOrders[1]!.OrdNumber;
    broken.oOrders[1]!.AccountID = 'OTHER';
    const response = await t.post('/api/v1/sales-orders', broken);
    expect(response.status).toBe(400);
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect((await answer(response)).errors).toEqual([
      { index: 0, errors: ['oOrders[0].oOrderLines[1].Qty: Expected number, received string'] },
      {
        index: 1,
        errors: [
          'oOrders[1].AccountID: Must equal the authenticated business id',
          'oOrders[1].OrdNumber: Required',
        ],
      },
    ]);
    expect(await t.topology.count()).toBe(0);
  });

  it("keeps a large CSV body's records on disk between validation and publishing, and removes them", async () => {
    const orders = 9000; // ~10 MB of records from a ~0.7 MB body: past what the spool keeps in memory
    const rows = [legacyCsv.split('\r\n')[0]!];
    for (let i = 0; i < orders; i++)
      rows.push(
        `ACME,SO-BIG-${i},2026-02-03,1,SKU-${i},2,EA,9.99`,
        `ACME,SO-BIG-${i},2026-02-03,2,SKU-2,1,EA,4.50`,
      );
    const spool = path.join(t.config.dataDirectory, 'spool');
    const seen = new Set<string>();
    const watching = setInterval(() => {
      for (const name of existsSync(spool) ? readdirSync(spool) : []) seen.add(name);
    }, 5);
    try {
      const response = await t.post('/api/v1/sales-orders', undefined, csv(rows.join('\n')));
      expect(response.status).toBe(202);
      const body = await answer(response);
      expect(body.recordCount).toBe(orders);
      expect([...seen]).toEqual([expect.stringMatching(/~\d+(\.\d+)?~[0-9a-f-]{36}\.messages$/)]);
      expect(readdirSync(spool)).toEqual([]);
      const messages = await t.topology.messages();
      expect(messages.map((m) => m.properties.messageId)).toEqual(body.messageIds);
      expect(messages[orders - 1]!.content).toMatchObject({
        identifiers: { shipmentId: `SO-BIG-${orders - 1}` },
      });
    } finally {
      clearInterval(watching);
    }
    // 9,000 messages to a quorum queue, confirmed after the broker's fsyncs: 16 s on a quiet
    // machine, about 30 s while the rest of the suite runs beside it.
  }, 120_000);

  it('points CSV errors at the line and column', async () => {
    const rows = legacyCsv.split('\r\n');
    rows[2] = 'ACME,SO-1,2026-02-03,2,SKU-2,12abc,EA,4.50';
    rows[3] = 'ACME,SO-2,03/02/2026,1,SKU-9,5,BOX,12';
    const response = await t.post('/api/v1/sales-orders', undefined, csv(rows.join('\n')));
    expect(response.status).toBe(400);
    const { errors } = await answer(response);
    expect(errors).toEqual([
      { index: 0, errors: ['line 3, column oOrderLines_Qty: Expected a number, received "12abc"'] },
      { index: 1, errors: [expect.stringMatching(/^line 4, column DueOutDate: Expected a date/)] },
    ]);
    expect(await t.topology.count()).toBe(0);
  });

  it.each([
    [
      'a missing column',
      legacyCsv.replace(',oOrderLines_UoM', '').replace(/,EA|,BOX/g, ''),
      /Missing column\(s\): oOrderLines_UoM/,
    ],
    [
      'an unknown column',
      legacyCsv.replace('oOrderLines_Qty', 'Quantity'),
      /Unknown column\(s\): Quantity/,
    ],
    ['a ragged row', `${legacyCsv}\r\nACME,SO-3`, /line 5/],
    ['broken quoting', `${legacyCsv}\r\nACME,"SO-3,2026-02-03,1,SKU-1,2,EA,1`, /quot|line 5/i],
    ['an empty file', '', /empty/i],
  ])('answers 400 malformed-body for %s', async (_name, body, detail) => {
    const response = await t.post('/api/v1/sales-orders', undefined, csv(body));
    expect(response.status).toBe(400);
    const problem = await answer(response);
    expect(problem.type).toBe('/problems/malformed-body');
    expect(problem.detail).toMatch(detail);
  });

  it('names the onboarding profile when a v2 field has no legacy source and the business has no profile', async () => {
    const own = structuredClone(legacyOrders);
    for (const order of own.oOrders) order.AccountID = 'OTHER';
    const response = await t.post('/api/v1/sales-orders', own, { auth: basicAuth(OTHER) });
    expect(response.status).toBe(400);
    const { errors } = await answer(response);
    const first = (errors![0] as { errors: string[] }).errors;
    expect(first).toContain(
      'identifiers.site: Required (no v1 field maps to it: it comes from the onboarding profile, "identifiers.site" for sales-orders of OTHER)',
    );
    expect(first.every((e) => !e.startsWith('financial.lineValue'))).toBe(true);
  });

  it('answers 415 for other media types, 401 without credentials, 405 for GET — each with the deprecation signal', async () => {
    const plain = await t.post('/api/v1/sales-orders', undefined, {
      raw: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(plain.status).toBe(415);
    expect((await answer(plain)).detail).toContain('application/json or text/csv');
    const anonymous = await t.post('/api/v1/sales-orders', legacyOrders, { auth: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('deprecation')).toMatch(/^@\d+$/);
    const get = await t.app.request('/api/v1/sales-orders');
    expect(get.status).toBe(405);
    expect(get.headers.get('link')).toContain('successor-version');
  });

  it('refuses a body that is not the legacy shape', async () => {
    for (const body of [[{ AccountID: 'ACME' }], { Orders: [] }, { oOrders: [], extra: 1 }]) {
      const response = await t.post('/api/v1/sales-orders', body);
      expect(response.status).toBe(400);
      expect((await answer(response)).type).toBe('/problems/malformed-body');
    }
  });
});

describe('GET /api/v1/customer/{accountId}/stock', () => {
  it('answers 501 problem details, the same for its own and another account', async () => {
    const own = await t.app.request('/api/v1/customer/ACME/stock', {
      headers: { authorization: basicAuth(ACME) },
    });
    const other = await t.app.request('/api/v1/customer/OTHER/stock', {
      headers: { authorization: basicAuth(ACME) },
    });
    expect(own.status).toBe(501);
    expect(own.headers.get('content-type')).toBe('application/problem+json');
    const [a, b] = [await answer(own), await answer(other)];
    expect(other.status).toBe(501);
    expect({ ...a, instance: undefined }).toEqual({ ...b, instance: undefined });
    expect(a.type).toBe('/problems/not-implemented');
  });

  it('still requires credentials', async () => {
    expect((await t.app.request('/api/v1/customer/ACME/stock')).status).toBe(401);
  });
});
