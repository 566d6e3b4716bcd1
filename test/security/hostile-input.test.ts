/**
 * Property-based tests: hostile bodies and headers against every batch endpoint of the real app
 * (real broker) and against the decoders. Every answer must be a 202 or a 4xx problem-details
 * body — never a 5xx, never a hang — and the service must keep serving.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, parseJsonArray } from '../../src/decode/json.js';
import { decodeCsv } from '../../src/decode/csv.js';
import { isIngestError } from '../../src/errors.js';
import { LEGACY } from '../../src/records/legacy/index.js';
import { KIND_NAMES, type KindName } from '../../src/records/kind.js';
import { createTestApp, type TestApp } from '../support/http-app.js';
import {
  deepJson,
  hostileValue,
  mutated,
  mutatedBytes,
  mutatedCsv,
  onboardingYaml,
  v1Csv,
  v1Json,
  v2Seeds,
} from '../support/hostile-input.js';

let t: TestApp;
let tried = 0;
const statuses = new Map<number, number>();
const HANG_MS = 15_000;
// Sized for a loaded 2-core machine: the whole file stays well under a minute.
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

beforeAll(async () => {
  t = await createTestApp({
    yaml: `${onboardingYaml()}\nhttp:\n  bodyLimitBytes: 4194304\n  maxRecordsPerBatch: 1000\n  abuse: { rateLimit: { requests: 1000000, windowSeconds: 1 } }`,
  });
});
afterAll(async () => {
  console.log(
    `hostile input: ${tried} inputs tried; answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
  );
  await t?.close();
});

const kind = fc.constantFrom(...KIND_NAMES);

/** Sends one request and checks the answer's shape; returns the status. */
async function send(
  path: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<number> {
  tried += 1;
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms`)), HANG_MS);
  });
  const response = await Promise.race([
    t.post(path, undefined, { raw: body, headers }),
    hang,
  ]).finally(() => clearTimeout(timer));
  const text = await response.text();
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  if (response.status === 202) {
    expect(JSON.parse(text)).toMatchObject({ success: true });
    return 202;
  }
  expect(response.status, text).toBeGreaterThanOrEqual(400);
  expect(response.status, text).toBeLessThan(500);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const problem = JSON.parse(text) as { status: number; type: string; title: string };
  expect(problem).toMatchObject({
    status: response.status,
    type: expect.stringMatching(/^\/problems\//),
    title: expect.any(String),
  });
  return response.status;
}

const json = { 'content-type': 'application/json' };
const csv = { 'content-type': 'text/csv' };

describe('hostile bodies over the real app', () => {
  it('v2: mutated valid batches, wrong types everywhere, prototype keys', async () => {
    const input = kind.chain((k) => mutated(v2Seeds(k)).map((batch) => ({ k, batch })));
    await fc.assert(
      fc.asyncProperty(
        input,
        async ({ k, batch }) =>
          void (await send(`/api/v2/${k}`, JSON.stringify(batch) ?? 'undefined', json)),
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it('v2 and v1 JSON: arbitrary values and hostile bytes (non-UTF-8, NUL, BOMs, truncation, huge strings)', async () => {
    const input = fc.record({
      k: kind,
      v1: fc.boolean(),
      body: fc.oneof(
        hostileValue.map((v) => Buffer.from(JSON.stringify(v) ?? '')),
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
        kind.chain((k) => mutatedBytes(JSON.stringify(v2Seeds(k)))),
        kind.chain((k) => mutatedBytes(JSON.stringify(v1Json(k)))),
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        input,
        async ({ k, v1, body }) => void (await send(`/api/${v1 ? 'v1' : 'v2'}/${k}`, body, json)),
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it('v1 JSON: mutated legacy batches', async () => {
    const input = kind.chain((k) => mutated(v1Json(k)).map((body) => ({ k, body })));
    await fc.assert(
      fc.asyncProperty(
        input,
        async ({ k, body }) =>
          void (await send(`/api/v1/${k}`, JSON.stringify(body) ?? 'null', json)),
      ),
      { numRuns: RUNS },
    );
  });

  it('v1 CSV: ragged rows, broken quoting, bare CR, NUL, invalid UTF-8, BOMs, huge cells', async () => {
    const input = kind.chain((k) =>
      fc
        .oneof(
          mutatedCsv(v1Csv(k)).map((s) => Buffer.from(s)),
          mutatedBytes(v1Csv(k)),
        )
        .map((body) => ({ k, body })),
    );
    await fc.assert(
      fc.asyncProperty(input, async ({ k, body }) => void (await send(`/api/v1/${k}`, body, csv))),
      { numRuns: RUNS * 2 },
    );
  });

  it('very deep nesting, huge arrays and huge strings', async () => {
    const [record] = v2Seeds('sales-orders');
    const withDeep = (depth: number, open?: string, close?: string) =>
      JSON.stringify([
        { ...record, identifiers: { ...(record!.identifiers as object), extra: '__DEEP__' } },
      ]).replace('"__DEEP__"', deepJson(depth, open, close));
    const bodies = [
      deepJson(200_000, '[', ']'),
      deepJson(200_000),
      withDeep(100_000),
      withDeep(100_000, '[', ']'),
      withDeep(9000), // parsed fine by V8, then overflowed JSON.stringify at publish: was a 500
      withDeep(60),
      `[${'{},'.repeat(1500)}{}]`, // more records than the limit
      JSON.stringify([{ ...record, order: 'x'.repeat(3_000_000) }]),
      JSON.stringify(Array.from({ length: 1001 }, () => record)),
    ];
    const answers = [];
    for (const body of bodies) answers.push(await send('/api/v2/sales-orders', body, json));
    expect(answers).toEqual([400, 400, 400, 400, 400, 202, 413, 400, 413]);
    for (const body of bodies.slice(0, 2)) await send('/api/v1/sales-orders', body, json);
  });

  it('x-correlation-id: any header value a client can send is adopted or replaced, never reflected raw', async () => {
    const value = fc.string({
      unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)),
      maxLength: 300,
    });
    await fc.assert(
      fc.asyncProperty(value, async (id) => {
        tried += 1;
        const response = await t.post('/api/v2/sales-orders', [], {
          headers: { 'x-correlation-id': id },
        });
        const echoed = response.headers.get('x-correlation-id')!;
        expect(echoed).toMatch(/^[\x21-\x7e]{1,128}$/);
        if (echoed !== id.trim()) expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('keeps serving: a real batch is accepted and published afterwards, memory stayed bounded', async () => {
    await t.topology.messages();
    const response = await t.post('sales-orders', v2Seeds('sales-orders'));
    expect(response.status).toBe(202);
    await expect.poll(() => t.topology.count()).toBe(2);
    // Bodies up to 4 MiB and 100k-deep nesting went through; nothing may have been kept.
    expect(process.memoryUsage().rss).toBeLessThan(1.5 * 2 ** 30);
  });
});

describe('decoders, directly', () => {
  it('parseJson / parseJsonArray: any bytes give a value or MalformedBody', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
          mutatedBytes(JSON.stringify(v2Seeds('work-orders'))),
        ),
        (bytes) => {
          tried += 2;
          for (const parse of [parseJson, parseJsonArray]) {
            try {
              parse(bytes);
            } catch (error) {
              expect(isIngestError(error) && error.code === 'malformed-body', String(error)).toBe(
                true,
              );
            }
          }
        },
      ),
      { numRuns: RUNS * 5 },
    );
  });

  it('decodeCsv: any text gives records or MalformedBody, for every layout', async () => {
    const input = kind.chain((k) =>
      fc
        .oneof(
          mutatedCsv(v1Csv(k)).map((s) => Buffer.from(s)),
          mutatedBytes(v1Csv(k)),
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
        )
        .map((bytes) => ({ k, bytes })),
    );
    await fc.assert(
      fc.asyncProperty(input, async ({ k, bytes }: { k: KindName; bytes: Buffer }) => {
        tried += 1;
        const chunks = async function* () {
          // Split at an arbitrary point: a multi-byte character or a quote may straddle chunks.
          yield bytes.subarray(0, bytes.length >> 1);
          yield bytes.subarray(bytes.length >> 1);
        };
        try {
          for await (const record of decodeCsv(chunks(), LEGACY[k]!.csv))
            expect(record).toBeDefined();
        } catch (error) {
          expect(isIngestError(error) && error.code === 'malformed-body', String(error)).toBe(true);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });
});
