/**
 * Limits over a real socket: what node:http itself refuses (header size, time-out, broken HTTP)
 * is answered as problem details too, header injection goes nowhere, and the service keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { LogCapture, basicAuth } from '../support/http-app.js';
import { rawRequest } from '../support/raw-http.js';
import { tempFolder } from '../support/temp.js';
import { readFileSync } from 'node:fs';
import net from 'node:net';

const temp = tempFolder();
const DEMO = basicAuth({ businessId: 'DEMO', apiKey: 'demo-api-key' });
const orders = JSON.parse(
  readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url), 'utf8'),
) as unknown[];
let service: RunningService;
const logs = new LogCapture();

beforeAll(async () => {
  const config = [
    `dataDirectory: ${path.join(temp.dir, 'data')}`,
    'http:',
    '  requestTimeoutMs: 1000',
    '  maxHeaderBytes: 4096',
    '  bodyLimitBytes: 20000',
    '  maxRecordsPerBatch: 3',
  ].join('\n');
  service = await startService({
    env: {
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      INGEST_CONFIG: temp.write('limits.yaml', config),
    },
    log: createLogger({ level: 'info', destination: logs }),
  });
});
afterAll(() => service?.stop());

const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;
function expectProblem(
  answer: { status: number; headers: Record<string, string>; body: string },
  status: number,
  type: string,
): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(answer.body)).toMatchObject({
    status,
    type,
    title: expect.any(String),
    detail: expect.any(String),
  });
}

describe('limits over a real socket', () => {
  it('answers a header section over maxHeaderBytes with 431 problem details', async () => {
    const answer = await rawRequest(service.url, [
      head([
        'POST /api/v2/sales-orders HTTP/1.1',
        'Host: x',
        `X-Padding: ${'a'.repeat(5000)}`,
        'Content-Length: 0',
      ]),
    ]);
    expectProblem(answer, 431, '/problems/header-fields-too-large');
    expect(JSON.parse(answer.body).detail).toContain('4096 bytes');
  });

  it('answers a body that stalls past requestTimeoutMs with 408 problem details', async () => {
    const started = performance.now();
    const answer = await rawRequest(service.url, [
      head([
        'POST /api/v2/sales-orders HTTP/1.1',
        'Host: x',
        `Authorization: ${DEMO}`,
        'Content-Type: application/json',
        'Content-Length: 100',
      ]),
      '[{"a":',
    ]);
    expectProblem(answer, 408, '/problems/request-timeout');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('answers bytes that are not HTTP, and CR/LF smuggled into a header, with 400 problem details', async () => {
    expectProblem(
      await rawRequest(service.url, ['NOT HTTP AT ALL\r\n\r\n']),
      400,
      '/problems/malformed-body',
    );
    expectProblem(
      await rawRequest(service.url, [
        head(['GET /healthz HTTP/1.1', 'Host: x', 'X-Correlation-Id: a\rSet-Cookie: evil=1']),
      ]),
      400,
      '/problems/malformed-body',
    );
  });

  it('never reflects a correlation id that is not printable ASCII (obs-text bytes, spaces) into a response header', async () => {
    const answer = await rawRequest(service.url, [
      Buffer.concat([
        Buffer.from(
          'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Correlation-Id: ok\xff\x85Set-Cookie: evil=1\r\n\r\n',
          'latin1',
        ),
      ]),
    ]);
    expect(answer.status).toBe(200);
    expect(answer.headers['x-correlation-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.raw.toLowerCase()).not.toContain('set-cookie');
  });

  it('states the limit in the 413 of an over-long body and of a batch with too many records', async () => {
    const post = (body: string) =>
      fetch(`${service.url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: { authorization: DEMO, 'content-type': 'application/json' },
        body,
      });
    const big = await post(JSON.stringify(['x'.repeat(30_000)]));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { detail: string }).detail).toBe(
      'The body exceeds the limit of 20000 bytes.',
    );
    const many = await post(JSON.stringify([...orders, ...orders].slice(0, 4)));
    expect(many.status).toBe(413);
    expect(((await many.json()) as { detail: string }).detail).toContain(
      'the limit is 3 records per batch',
    );
  });

  it('answers a chunked body past the limit with 413 and closes the connection, reading no more of it', async () => {
    // The body's end never comes: the answer arrives only because the service closes the connection.
    const started = performance.now();
    const answer = await rawRequest(
      service.url,
      [
        head([
          'POST /api/v2/sales-orders HTTP/1.1',
          'Host: x',
          `Authorization: ${DEMO}`,
          'Content-Type: application/json',
          'Transfer-Encoding: chunked',
        ]),
        `${(30_000).toString(16)}\r\n${'['.padEnd(30_000, ' ')}\r\n`,
      ],
      5_000,
    );
    expectProblem(answer, 413, '/problems/payload-too-large');
    expect(answer.headers.connection).toBe('close');
    expect(performance.now() - started).toBeLessThan(900); // not the 1000 ms request time-out
  });

  it('takes a client gone mid-body as an aborted request (400 in the log), not an error, and publishes nothing', async () => {
    const { hostname, port } = new URL(service.url);
    const before = logs.lines.length;
    await new Promise<void>((resolve) => {
      const socket = net.connect({ host: hostname, port: Number(port) }, () => {
        socket.write(
          head([
            'POST /api/v2/sales-orders HTTP/1.1',
            'Host: x',
            `Authorization: ${DEMO}`,
            'Content-Type: application/json',
            'Content-Length: 5000',
          ]),
        );
        socket.write('[{"identifiers":');
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 100);
      });
    });
    await expect
      .poll(() => logs.lines.slice(before).find((l) => l.code === '/problems/request-aborted'), {
        timeout: 3_000,
      })
      .toMatchObject({ status: 400, msg: 'request refused' });
    expect(logs.lines.slice(before).filter((l) => l.msg === 'batch accepted')).toEqual([]);
  });

  it('keeps serving after all of it', async () => {
    const response = await fetch(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { authorization: DEMO, 'content-type': 'application/json' },
      body: JSON.stringify(orders),
    });
    expect(response.status).toBe(202);
    // Nothing above was a 5xx or a logged failure of ours (a client's stalled body included).
    expect(
      logs.lines.filter(
        (l) => l.level === 'error' || (typeof l.status === 'number' && l.status >= 500),
      ),
    ).toEqual([]);
  });
});
