import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { withoutPaths } from '../../src/ingest/message-id.js';
import { KIND_NAMES } from '../../src/records/index.js';
import { LEGACY } from '../../src/records/legacy/index.js';
import { FIXTURES } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';

/**
 * The onboarding profile's `legacy` options (hardening issue, contract decisions): the real wire
 * name of the returns field the spec calls `PlatformRef`, and ignoring fields beyond the v1 shape.
 */
const read = (kind: string, file: string) =>
  readFileSync(new URL(`${kind}/v1/${file}`, FIXTURES), 'utf8');
const profiles = Object.fromEntries(
  KIND_NAMES.map((kind) => [kind, JSON.parse(read(kind, 'profile.json'))]),
);
const appWith = (legacy?: Record<string, string>) =>
  createTestApp({
    yaml: stringify({ onboarding: { ACME: { ...profiles, ...(legacy && { legacy }) } } }),
  });
const RETURNS = '/api/v1/return-goods';
const SALES = '/api/v1/sales-orders';
const CSV = { 'content-type': 'text/csv' };
const volatile = LEGACY['return-goods']!.receiptTimePaths;
const stable = (content: unknown) => withoutPaths(content as Record<string, unknown>, volatile);
/** The golden input with the returns reference sent under another name. */
const aliased = (text: string, name: string) => text.replaceAll('PlatformRef', name);

let plain: TestApp;
let alias: TestApp;
let ignoring: TestApp;
beforeAll(async () => {
  [plain, alias, ignoring] = await Promise.all([
    appWith(),
    appWith({ platformRef: 'ShopRef' }),
    appWith({ unknownFields: 'ignore' }),
  ]);
});
afterAll(() => Promise.all([plain, alias, ignoring].map((t) => t.close())));

describe('the PlatformRef wire name, per onboarding profile', () => {
  it('is read from the alias in JSON and CSV, publishing the same canonical records under the same ids', async () => {
    const golden = await plain.post(RETURNS, undefined, {
      raw: read('return-goods', 'valid.json'),
    });
    expect(golden.status).toBe(202);
    const goldenIds = (await answer(golden)).messageIds;
    const goldenRecords = (await plain.topology.messages()).map((m) => stable(m.content));
    expect(goldenRecords.map((r) => r.identifiers)).toMatchObject([
      { businessRgaNumber: 'RP-558120' },
      { businessRgaNumber: 'RP-558121' },
    ]);

    const json = await alias.post(RETURNS, undefined, {
      raw: aliased(read('return-goods', 'valid.json'), 'ShopRef'),
    });
    expect(json.status).toBe(202);
    expect((await answer(json)).messageIds).toEqual(goldenIds);
    const csv = await alias.post(RETURNS, undefined, {
      raw: aliased(read('return-goods', 'valid.csv'), 'ShopRef'),
      headers: CSV,
    });
    expect(csv.status).toBe(202);
    expect((await answer(csv)).messageIds).toEqual(goldenIds);
    const published = (await alias.topology.messages()).map((m) => stable(m.content));
    expect(published).toEqual([...goldenRecords, ...goldenRecords]);
  });

  it('is refused without the alias, as before (JSON and CSV)', async () => {
    const json = await plain.post(RETURNS, undefined, {
      raw: aliased(read('return-goods', 'valid.json'), 'ShopRef'),
    });
    expect(json.status).toBe(400);
    expect((await answer(json)).errors).toContainEqual({
      index: 0,
      errors: expect.arrayContaining([
        expect.stringMatching(/^rOrders\[0\]\.ShopRef: Unknown field/),
      ]),
    });
    const csv = await plain.post(RETURNS, undefined, {
      raw: aliased(read('return-goods', 'valid.csv'), 'ShopRef'),
      headers: CSV,
    });
    expect(csv.status).toBe(400);
    expect((await answer(csv)).detail).toMatch(
      /Missing column\(s\): PlatformRef\. Unknown column\(s\): ShopRef\./,
    );
    expect(await plain.topology.count()).toBe(0);
  });

  it('replaces the spec name for that business, and errors name the alias', async () => {
    const spec = await alias.post(RETURNS, undefined, { raw: read('return-goods', 'valid.json') });
    expect(spec.status).toBe(400);
    const wrong = JSON.parse(aliased(read('return-goods', 'valid.json'), 'ShopRef'));
    wrong.rOrders[0].ShopRef = 42;
    const typed = await alias.post(RETURNS, wrong);
    expect(typed.status).toBe(400);
    expect((await answer(typed)).errors).toEqual([
      { index: 0, errors: ['rOrders[0].ShopRef: Expected string, received number'] },
    ]);
    expect(await alias.topology.count()).toBe(0);
  });
});

describe('unknown legacy fields, per onboarding profile', () => {
  const withExtras = () => {
    const body = JSON.parse(read('return-goods', 'valid.json'));
    body.BatchRef = 'B-1';
    body.rOrders[0].ReturnChannel = 'WEB';
    body.rOrders[1].ReturnChannel = 'STORE';
    body.rOrders[1].rOrderLines[0].Condition = 'A';
    return body;
  };

  it('are refused by default', async () => {
    const body = withExtras();
    delete body.BatchRef;
    const response = await plain.post(RETURNS, body);
    expect(response.status).toBe(400);
    expect(JSON.stringify((await answer(response)).errors)).toContain(
      'rOrders[1].rOrderLines[0].Condition: Unknown field',
    );
  });

  it('are left out of v1 JSON when the profile says ignore: the same records, listed in ignoredFields, logged once', async () => {
    const golden = await plain.post(RETURNS, undefined, {
      raw: read('return-goods', 'valid.json'),
    });
    const goldenIds = (await answer(golden)).messageIds;
    const goldenRecords = (await plain.topology.messages()).map((m) => stable(m.content));

    for (let i = 0; i < 2; i++) {
      const response = await ignoring.post(RETURNS, withExtras());
      expect(response.status).toBe(202);
      const body = (await answer(response)) as Awaited<ReturnType<typeof answer>> & {
        ignoredFields?: string[];
      };
      expect(body.messageIds).toEqual(goldenIds);
      expect(body.ignoredFields).toEqual(['BatchRef', 'ReturnChannel', 'rOrderLines[].Condition']);
    }
    const published = (await ignoring.topology.messages()).map((m) => stable(m.content));
    expect(published).toEqual([...goldenRecords, ...goldenRecords]);
    const logged = ignoring.logs.lines.filter((line) => Array.isArray(line.ignoredFields));
    expect(logged.map((line) => line.ignoredFields)).toEqual([
      ['BatchRef', 'ReturnChannel', 'rOrderLines[].Condition'],
    ]);
  });

  it('are left out of v1 CSV when the profile says ignore: extra columns listed, never read', async () => {
    const csv = read('sales-orders', 'valid.csv')
      .split(/\r?\n/)
      .map((line, i) => (line === '' ? line : `${line},${i === 0 ? 'Channel' : 'web'}`))
      .join('\n');
    const refused = await plain.post(SALES, undefined, { raw: csv, headers: CSV });
    expect(refused.status).toBe(400);
    expect((await answer(refused)).detail).toMatch(/Unknown column\(s\): Channel\./);

    const golden = await plain.post(SALES, undefined, {
      raw: read('sales-orders', 'valid.csv'),
      headers: CSV,
    });
    const goldenIds = (await answer(golden)).messageIds;
    const response = await ignoring.post(SALES, undefined, { raw: csv, headers: CSV });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({
      messageIds: goldenIds,
      ignoredFields: ['Channel'],
    });
    // Missing columns are still refused.
    const missing = await ignoring.post(SALES, undefined, {
      raw: csv.replace('OrdNumber', 'OrderNo'),
      headers: CSV,
    });
    expect(missing.status).toBe(400);
    expect((await answer(missing)).detail).toMatch(/Missing column\(s\): OrdNumber\./);
    await plain.topology.messages();
    await ignoring.topology.messages();
  });

  it('an answer without ignored fields has no ignoredFields', async () => {
    const response = await ignoring.post(RETURNS, undefined, {
      raw: read('return-goods', 'valid.json'),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).not.toHaveProperty('ignoredFields');
    await ignoring.topology.messages();
  });
});
