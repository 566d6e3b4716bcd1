/**
 * Tenant isolation: authenticated as ACME, a record for another business must never get in —
 * whatever the kind, v2 or v1 (JSON or CSV), wherever the business id sits, however it is spelt.
 * Every attempt is a 400 (401 for a mangled user-id) and nothing reaches the queue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KINDS } from '../../src/records/index.js';
import { KIND_NAMES, type KindName } from '../../src/records/kind.js';
import { ACME, answer, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';
import { onboardingYaml, v1Csv, v1Json } from '../support/hostile-input.js';
import { validRecords } from '../records/fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    yaml: `${onboardingYaml()}\nhttp:\n  abuse: { rateLimit: { requests: 100000, windowSeconds: 1 } }`,
  });
});
afterAll(async () => {
  expect(await t.topology.count()).toBe(0); // nothing of any attempt was published
  await t.close();
});

/** Other businesses, and ACME's id altered in case, whitespace, invisible or look-alike characters. */
const VARIANTS = [
  'OTHER',
  'other',
  'acme',
  'Acme',
  ' ACME',
  'ACME ',
  '\tACME',
  'ACME\n',
  'ACME\u0000',
  'ACME\u200b',
  '\ufeffACME',
  'ＡＣＭＥ',
  '\u0410\u0421\u041c\u0415',
  'ACM',
  'ACMEE',
  '',
];
const TENANCY = 'Must equal the authenticated business id';

type Json = Record<string, unknown>;
const clone = <T>(value: T): T => structuredClone(value);
function setPath(record: Json, path: readonly string[], value: unknown): Json {
  const copy = clone(record);
  let at = copy;
  for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Json;
  at[path[path.length - 1]!] = value;
  return copy;
}

async function expectRefused(response: Response, status = 400): Promise<string[]> {
  const body = await answer(response);
  expect(response.status, JSON.stringify(body)).toBe(status);
  return ((body.errors ?? []) as Array<{ errors: string[] }>).flatMap((e) => e.errors);
}

describe.each(KIND_NAMES)('%s', (kind: KindName) => {
  const idPath = KINDS[kind].businessIdPath;
  const [record] = validRecords(kind) as Json[];

  it('v2: another or altered business id in the checked field', async () => {
    for (const variant of VARIANTS) {
      const errors = await expectRefused(await t.post(kind, [setPath(record!, idPath, variant)]));
      expect(errors.join('\n'), JSON.stringify(variant)).toMatch(
        variant === '' ? /Expected at least 1 character|Required/ : TENANCY,
      );
    }
  });

  it("v2: a second business id where it would read as the record's own (root, beside the checked field, the v1 name)", async () => {
    const placements: Array<[string, (r: Json) => Json]> = [
      ['businessId at the root', (r) => ({ ...r, businessId: 'OTHER' })],
      ['AccountID at the root', (r) => ({ ...r, AccountID: 'OTHER' })],
      [
        'AccountID beside the checked field',
        (r) => setPath(r, [...idPath.slice(0, -1), 'AccountID'], 'OTHER'),
      ],
      ['an object as id at the root', (r) => ({ ...r, businessId: { id: 'ACME' } })],
    ];
    if (kind === 'master-data')
      placements.push([
        'businessId on product',
        (r) => setPath(r, ['product', 'businessId'], 'OTHER'),
      ]);
    for (const [where, place] of placements) {
      const errors = await expectRefused(await t.post(kind, [place(record!)]));
      expect(errors.join('\n'), where).toContain(TENANCY);
    }
    // Deeper, a businessId is someone else's (spec §5.4 names where a record carries its business):
    // a B2B customer's own id, a line's supplier, a nested identifier, passed through to the queue.
    const line = Object.entries(record!).find(
      ([, v]) => Array.isArray(v) && typeof v[0] === 'object',
    )?.[0];
    let others = setPath(
      setPath(record!, ['customer', 'businessId'], 'CUST-B2B-77'),
      [...idPath.slice(0, -1), 'extra', 'businessId'],
      'OTHER',
    );
    if (line)
      others = {
        ...others,
        [line]: (others[line] as Json[]).map((l, i) =>
          i === 0 ? { ...l, businessId: 'SUPPLIER-3' } : l,
        ),
      };
    if (kind === 'master-data')
      others = setPath(others, ['product', 'information', 'businessId'], 'MAKER-1');
    const deeper = await t.post(kind, [others], {
      headers: { 'x-correlation-id': `deeper-${kind}` },
    });
    expect(deeper.status, JSON.stringify(await deeper.clone().json())).toBe(202);
    const [deeperMessage] = await t.topology.messages();
    expect(deeperMessage!.content).toMatchObject({ customer: { businessId: 'CUST-B2B-77' } });
    // Someone else's account number is ordinary data, passed through: only the identity keys
    // (`businessId`, v1 `AccountID`) are checked (issue: a customer's accountId was refused).
    const withAccounts = setPath(
      setPath(record!, ['customer', 'accountId'], 'CUSTOMER-9'),
      [...idPath.slice(0, -1), 'BusinessID'],
      'MARKETPLACE-1',
    );
    const passed = await t.post(kind, [withAccounts], {
      headers: { 'x-correlation-id': `accounts-${kind}` },
    });
    expect(passed.status).toBe(202);
    const [message] = await t.topology.messages();
    expect(message!.content).toMatchObject({ customer: { accountId: 'CUSTOMER-9' } });
    // The same keys holding ACME's own id are no problem.
    const own = await t.post(kind, [{ ...record!, AccountID: 'ACME' }], {
      headers: { 'x-correlation-id': `own-${kind}` },
    });
    expect(own.status).toBe(202);
    await t.topology.messages(); // drained: the suite's final check is that nothing else got in
  });

  it('v2: one foreign record refuses the whole batch', async () => {
    const errors = await expectRefused(
      await t.post(kind, [record, setPath(record!, idPath, 'OTHER'), record]),
    );
    expect(errors).toEqual([`${idPath.join('.')}: ${TENANCY}`]);
  });

  it('v2: duplicated keys — a foreign last value is refused; a foreign first value never reaches the queue', async () => {
    const text = JSON.stringify([record]);
    const own = `"businessId":"ACME"`;
    expect(text).toContain(own);
    await expectRefused(
      await t.post(kind, undefined, { raw: text.replace(own, `${own},"businessId":"OTHER"`) }),
    );
    // JSON keeps the last of duplicated keys; the record is re-serialised before publishing, so
    // the broker (and every consumer) sees one id, the authenticated one, and no trace of OTHER.
    const response = await t.post(kind, undefined, {
      raw: text.replace(own, `"businessId":"OTHER",${own}`),
    });
    expect(response.status).toBe(202);
    const [message] = await t.topology.messages();
    expect(JSON.stringify(message!.content)).not.toContain('OTHER');
  });

  it('v1 JSON: AccountID of another business or altered, an extra id field, duplicated keys', async () => {
    const legacy = v1Json(kind) as Record<string, Json[]>;
    const root = Object.keys(legacy)[0]!;
    const withOrder = (order: Json) => ({ [root]: [order, ...legacy[root]!.slice(1)] });
    for (const variant of VARIANTS) {
      const errors = await expectRefused(
        await t.post(`/api/v1/${kind}`, withOrder({ ...legacy[root]![0]!, AccountID: variant })),
      );
      expect(errors.length, JSON.stringify(variant)).toBeGreaterThan(0);
    }
    await expectRefused(
      await t.post(`/api/v1/${kind}`, withOrder({ ...legacy[root]![0]!, businessId: 'OTHER' })),
    );
    const text = JSON.stringify(legacy);
    await expectRefused(
      await t.post(`/api/v1/${kind}`, undefined, {
        raw: text.replace('"AccountID":"ACME"', '"AccountID":"ACME","AccountID":"OTHER"'),
      }),
    );
  });

  it('v1 CSV: AccountID cells of another business or altered, a row of another business inside an order, an extra id column', async () => {
    const [header, ...rows] = v1Csv(kind).trimEnd().split('\n');
    const column = header!.split(',').indexOf('AccountID');
    const withCell = (row: number, value: string) =>
      [
        header,
        ...rows.map((r, i) =>
          i === row
            ? r
                .split(',')
                .map((c, j) => (j === column ? value : c))
                .join(',')
            : r,
        ),
      ].join('\n');
    const csv = (body: string) =>
      t.post(`/api/v1/${kind}`, undefined, { raw: body, headers: { 'content-type': 'text/csv' } });
    for (const variant of VARIANTS.filter((v) => !v.includes('\n') && !v.includes('\u0000')))
      await expectRefused(await csv(withCell(0, variant.includes(' ') ? `"${variant}"` : variant)));
    await expectRefused(await csv(withCell(rows.length > 1 ? 1 : 0, 'OTHER')));
    await expectRefused(
      await csv([`${header},businessId`, ...rows.map((r) => `${r},OTHER`)].join('\n')),
    );
  });
});

describe('the credential itself', () => {
  it("refuses ACME's key under an altered user-id with 401", async () => {
    for (const user of ['acme', ' ACME', 'ACME ', 'ＡＣＭＥ', 'ACME\u200b', 'OTHER']) {
      await expectRefused(
        await t.post('sales-orders', validRecords('sales-orders'), {
          auth: basicAuth({ businessId: user, apiKey: ACME.apiKey }),
        }),
        401,
      );
    }
  });
});
