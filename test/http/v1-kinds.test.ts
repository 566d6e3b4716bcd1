import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { withoutPaths } from '../../src/ingest/message-id.js';
import { KIND_NAMES } from '../../src/records/index.js';
import { LEGACY } from '../../src/records/legacy/index.js';
import { FIXTURES } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';

const read = (kind: string, file: string) =>
  readFileSync(new URL(`${kind}/v1/${file}`, FIXTURES), 'utf8');
const profiles = Object.fromEntries(
  KIND_NAMES.map((kind) => [kind, JSON.parse(read(kind, 'profile.json'))]),
);

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ yaml: stringify({ onboarding: { ACME: profiles } }) });
});
afterAll(() => t.close());

describe.each(KIND_NAMES)('POST /api/v1/%s', (kind) => {
  it('accepts the golden JSON and CSV inputs, publishing the same v2 records under the same ids', async () => {
    const json = await t.post(`/api/v1/${kind}`, undefined, { raw: read(kind, 'valid.json') });
    expect(json.status).toBe(202);
    const fromJson = await answer(json);
    const published = await t.topology.messages();
    expect(published.map((m) => m.properties.messageId)).toEqual(fromJson.messageIds);
    expect(
      published.every((m) => m.routingKey === `${kind}.ACME` && m.properties.type === kind),
    ).toBe(true);

    const expected = JSON.parse(read(kind, 'expected.json')) as Array<Record<string, unknown>>;
    expect(fromJson.recordCount).toBe(expected.length);
    // Receipt-time fields (return goods) carry this request's time, not the fixture's.
    const volatile = LEGACY[kind]!.receiptTimePaths;
    const stable = (value: unknown) => withoutPaths(value as Record<string, unknown>, volatile);
    for (const message of published) {
      for (const path of volatile.filter((p) => !p.includes('[]'))) {
        const [a, b] = path.split('.') as [string, string];
        expect(
          Date.parse((message.content as Record<string, Record<string, string>>)[a]![b]!),
        ).toBeGreaterThan(Date.now() - 60_000);
      }
    }
    expect(published.map((m) => stable(m.content))).toEqual(expected.map(stable));

    const csv = await t.post(`/api/v1/${kind}`, undefined, {
      raw: read(kind, 'valid.csv'),
      headers: { 'content-type': 'text/csv' },
    });
    expect(csv.status).toBe(202);
    expect((await answer(csv)).messageIds).toEqual(fromJson.messageIds);
    expect(await t.topology.count()).toBe(expected.length);
    await t.topology.messages();
  });
});

describe.each(KIND_NAMES)('POST /api/v1/%s refusals', (kind) => {
  const folder = new URL(`${kind}/v1/invalid/`, FIXTURES);
  // Cases that need another profile than the kind's own are covered by the golden conversion tests.
  const inputs = readdirSync(folder).filter(
    (f) =>
      /\.(json|csv)$/.test(f) &&
      !/\.(expected|profile)\.json$/.test(f) &&
      !existsSync(new URL(f.replace(/\.(json|csv)$/, '.profile.json'), folder)),
  );

  it.each(inputs)('answers %s with the golden 400 errors and publishes nothing', async (input) => {
    const csv = input.endsWith('.csv');
    const response = await t.post(`/api/v1/${kind}`, undefined, {
      raw: readFileSync(new URL(input, folder), 'utf8'),
      headers: { 'content-type': csv ? 'text/csv' : 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
    const expected = JSON.parse(
      readFileSync(new URL(input.replace(/\.(json|csv)$/, '.expected.json'), folder), 'utf8'),
    );
    expect((await answer(response)).errors).toEqual(expected);
    expect(await t.topology.count()).toBe(0);
  });

  it('answers 401 without credentials and 400 for a CSV that is not its shape', async () => {
    expect(
      (await t.post(`/api/v1/${kind}`, undefined, { raw: read(kind, 'valid.json'), auth: null }))
        .status,
    ).toBe(401);
    const wrong = await t.post(`/api/v1/${kind}`, undefined, {
      raw: 'a,b\n1,2\n',
      headers: { 'content-type': 'text/csv' },
    });
    expect(wrong.status).toBe(400);
    expect((await answer(wrong)).detail).toMatch(/Missing column/);
  });
});
