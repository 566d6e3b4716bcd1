import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import {
  ACME,
  answer,
  basicAuth,
  createTestApp,
  OTHER,
  type TestApp,
} from '../support/http-app.js';

/**
 * `Content-Encoding` is honoured, never ignored (hardening issue, finding 10): a real gzip body
 * got `400 not valid UTF-8`, and a plain body labelled gzip got `202`.
 */
const LIMIT = 65_536;
const orders = validRecords('sales-orders');
const json = Buffer.from(JSON.stringify(orders));
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ yaml: `http:\n  bodyLimitBytes: ${LIMIT}\n` });
});
afterAll(() => t.close());

const post = (body: Buffer, encoding: string) =>
  t.post('sales-orders', undefined, {
    raw: body,
    headers: { 'content-type': 'application/json', 'content-encoding': encoding },
  });

describe('Content-Encoding', () => {
  it.each([
    ['gzip', gzipSync(json)],
    ['x-gzip', gzipSync(json)],
    ['deflate', deflateSync(json)],
    ['br', brotliCompressSync(json)],
    ['identity', json],
    ['gzip, br', brotliCompressSync(gzipSync(json))],
  ])('decodes a %s body and accepts the batch', async (encoding, body) => {
    const response = await post(body, encoding);
    expect(response.status).toBe(202);
    expect(await answer(response)).toMatchObject({ recordCount: orders.length });
    expect(await t.topology.count()).toBe(orders.length);
    await t.topology.messages();
  });

  it('refuses a plain body labelled gzip with 400, publishing nothing', async () => {
    const response = await post(json, 'gzip');
    expect(response.status).toBe(400);
    expect(await answer(response)).toMatchObject({
      type: '/problems/malformed-body',
      detail: 'The body is not valid gzip data, as its Content-Encoding says it is.',
    });
    expect(await t.topology.count()).toBe(0);
  });

  it('refuses a coding it does not decode with 415 and says which it does', async () => {
    const response = await post(json, 'compress');
    expect(response.status).toBe(415);
    expect(response.headers.get('accept-encoding')).toBe('gzip, deflate, br');
    expect(await answer(response)).toMatchObject({
      type: '/problems/unsupported-media-type',
      detail: expect.stringContaining('"compress" is not supported'),
    });
  });

  it('counts decoded bytes against the limit: a small body that inflates past it is a 413', async () => {
    const bomb = gzipSync(Buffer.alloc(50 * LIMIT, 0x20)); // ~3 MB of spaces in ~3 KB
    expect(bomb.length).toBeLessThan(LIMIT);
    const response = await post(bomb, 'gzip');
    expect(response.status).toBe(413);
    expect(await answer(response)).toMatchObject({
      detail: `The body decoded from gzip exceeds the limit of ${LIMIT} bytes.`,
    });
    expect(await t.topology.count()).toBe(0);
  });
});

/**
 * Decoding is bounded (hardening issue: 120 concurrent 113-byte brotli bombs took RSS from 112 MB
 * to 1.85 GB): a business's bodies are decoded within its in-flight slots, and the whole process
 * decodes at most `http.maxConcurrentDecodes` bodies at once.
 */
describe('Content-Encoding: decoding is bounded', () => {
  const bomb = brotliCompressSync(Buffer.alloc(50 * LIMIT, 0x20));
  const postAs = (app: TestApp, body: Buffer, auth?: string) =>
    app.post('sales-orders', undefined, {
      raw: body,
      headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
      ...(auth && { auth }),
    });

  it("decodes within the business's in-flight slots: with its one slot taken, a bomb is a 429, not decoded", async () => {
    const one = await createTestApp({
      yaml: `http:\n  bodyLimitBytes: ${LIMIT}\n  abuse:\n    maxInFlightBatches: 1\n`,
    });
    try {
      let finish!: () => void;
      const held = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(Buffer.from(JSON.stringify(orders).slice(0, -1)));
          finish = () => {
            controller.enqueue(Buffer.from(']'));
            controller.close();
          };
        },
      });
      const holding = one.app.request('/api/v2/sales-orders', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuth(ACME) },
        body: held,
        duplex: 'half',
      } as RequestInit);
      await expect.poll(async () => (await postAs(one, bomb)).status).toBe(429);
      finish();
      expect((await holding).status).toBe(202);
      expect((await postAs(one, bomb)).status).toBe(413); // the slot is free again
    } finally {
      await one.close();
    }
  });

  it('decodes at most maxConcurrentDecodes bodies at once in the process: one more is a 503 with Retry-After', async () => {
    const single = await createTestApp({
      yaml: `http:\n  bodyLimitBytes: ${LIMIT}\n  maxConcurrentDecodes: 1\n`,
    });
    try {
      const other = basicAuth(OTHER);
      // Each credential verified once first, so both requests reach the decoders together.
      expect((await postAs(single, bomb)).status).toBe(413);
      expect((await postAs(single, bomb, other)).status).toBe(413);
      const answers = await Promise.all([postAs(single, bomb), postAs(single, bomb, other)]);
      expect(answers.map((r) => r.status).sort()).toEqual([413, 503]);
      const busy = answers.find((r) => r.status === 503)!;
      expect(busy.headers.get('retry-after')).toBe('1');
      expect(await answer(busy)).toMatchObject({ type: '/problems/decoders-busy' });
      expect((await postAs(single, bomb, other)).status).toBe(413); // the decoder is free again
    } finally {
      await single.close();
    }
  });
});
