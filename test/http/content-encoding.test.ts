import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validRecords } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';

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
