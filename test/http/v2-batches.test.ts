import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KIND_NAMES, KINDS } from '../../src/records/index.js';
import { invalidFixtures, validRecords } from '../records/fixtures.js';
import { createTestApp, type TestApp, answer } from '../support/http-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** What the pipeline must forward for a fixture record: the record minus platform-set fields. */
function forwarded(
  kind: (typeof KIND_NAMES)[number],
  record: Record<string, unknown>,
): Record<string, unknown> {
  const copy = structuredClone(record);
  for (const path of KINDS[kind].platformFields) {
    let parent: Record<string, unknown> | undefined = copy;
    for (const key of path.slice(0, -1))
      parent = parent?.[key] as Record<string, unknown> | undefined;
    if (parent) delete parent[path.at(-1)!];
  }
  return copy;
}

/** JSON as a client would send it: keeps `1e999` (parsed to Infinity) where JSON.stringify would write null. */
function wireJson(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) =>
    v === Infinity ? '\u0000inf' : v === -Infinity ? '\u0000-inf' : v,
  );
  return text.replaceAll('"\\u0000inf"', '1e999').replaceAll('"\\u0000-inf"', '-1e999');
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe.each(KIND_NAMES)('POST /api/v2/%s', (kind) => {
  const records = validRecords(kind);

  it('accepts a batch of 1: 202 bulk response, the record is in the queue with its properties', async () => {
    const response = await t.post(kind, records.slice(0, 1), {
      headers: { 'x-correlation-id': `corr-${kind}-1` },
    });
    expect(response.status).toBe(202);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = await answer(response);
    expect(body).toEqual({
      success: true,
      recordCount: 1,
      messageIds: [expect.stringMatching(UUID)],
      correlationId: `corr-${kind}-1`,
    });

    const [message, ...rest] = await t.topology.messages();
    expect(rest).toEqual([]);
    expect(message!.routingKey).toBe(`${kind}.ACME`);
    expect(message!.content).toEqual(forwarded(kind, records[0]!));
    expect(message!.properties).toMatchObject({
      messageId: body.messageIds[0],
      correlationId: `corr-${kind}-1`,
      type: kind,
      contentType: 'application/json',
      deliveryMode: 2,
      headers: { 'business-id': 'ACME', source: 'http', 'source-name': `/api/v2/${kind}` },
    });
    expect(Math.abs(message!.properties.timestamp * 1000 - Date.now())).toBeLessThan(60_000);
  });

  it('accepts a batch of 3: one distinct message id per record, in order', async () => {
    const response = await t.post(kind, records);
    expect(response.status).toBe(202);
    const body = await answer(response);
    expect(body.recordCount).toBe(3);
    expect(new Set(body.messageIds).size).toBe(3);
    const messages = await t.topology.messages();
    expect(messages.map((m) => m.properties.messageId)).toEqual(body.messageIds);
    expect(messages.map((m) => m.content)).toEqual(records.map((r) => forwarded(kind, r)));
  });

  it('gives the same record the same message id when the batch is retried', async () => {
    const first = await answer(await t.post(kind, records));
    const again = await answer(await t.post(kind, records));
    expect(again.messageIds).toEqual(first.messageIds);
    await t.topology.messages();
  });

  for (const fixture of invalidFixtures(kind)) {
    it(`rejects ${fixture.file} with the exact 400 and publishes nothing`, async () => {
      const response = await t.post(kind, undefined, { raw: wireJson(fixture.batch) });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(await answer(response)).toEqual({
        type: '/problems/validation-failed',
        title: 'Bad Request',
        status: 400,
        detail: `${fixture.errors.length} of ${fixture.batch.length} record(s) failed validation; no record was accepted.`,
        instance: `/api/v2/${kind}`,
        errors: fixture.errors,
      });
      expect(await t.topology.count()).toBe(0);
    });
  }
});

describe('tenancy', () => {
  it('refuses records of another business, naming each index, and publishes nothing', async () => {
    const records = validRecords('sales-orders');
    const foreign = structuredClone(records[2]!) as { identifiers: { businessId: string } };
    foreign.identifiers.businessId = 'OTHER';
    const response = await t.post('sales-orders', [records[0], foreign, records[1], foreign]);
    expect(response.status).toBe(400);
    const body = await answer(response);
    expect(body.errors).toEqual([
      { index: 1, errors: ['identifiers.businessId: Must equal the authenticated business id'] },
      { index: 3, errors: ['identifiers.businessId: Must equal the authenticated business id'] },
    ]);
    expect(JSON.stringify(body)).not.toContain('OTHER');
    expect(await t.topology.count()).toBe(0);
  });

  it('master data is checked on product.identifiers.businessId', async () => {
    const product = structuredClone(validRecords('master-data')[0]!) as {
      product: { identifiers: { businessId: string } };
    };
    product.product.identifiers.businessId = 'OTHER';
    const response = await t.post('master-data', [product]);
    expect((await answer(response)).errors).toEqual([
      {
        index: 0,
        errors: ['product.identifiers.businessId: Must equal the authenticated business id'],
      },
    ]);
  });
});
