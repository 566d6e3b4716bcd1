/**
 * HTTPS (`http.tls`): the service started as `serve` starts it, with a certificate made here by
 * openssl, answers a real batch over HTTP/1.1 + TLS with 202 (the records on the broker), keeps
 * its header-size limit there, and refuses a key file others may read. Every HTTP/1.1 check runs
 * twice: on node:https, and on node:http2's server with `http.tls.http2` (ALPN h2 + http/1.1),
 * whose h2 streams are checked apart.
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import path from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError } from '../../src/operator-errors.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { heldConnections } from '../support/held-sockets.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml, LogCapture } from '../support/http-app.js';
import { type HeldConnection, holdConnection } from '../support/raw-http.js';
import { runCli } from '../support/cli-process.js';
import { tempFolder } from '../support/temp.js';
import { makeCertificate } from '../support/tls-certificate.js';

const temp = tempFolder('tls-');
const cert = path.join(temp.dir, 'cert.pem');
const key = path.join(temp.dir, 'key.pem');
let topology: TestTopology;
let service: RunningService | undefined;
/** Connections of the stalled-handshake test: the attack held 500 (descriptors 24 → 524, for ever). */
const STALLED = 100;
const logs = new LogCapture();

/** The SHA-256 fingerprint of the certificate a new connection to `url` is served. */
function servedFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: hostname, port: Number(port), rejectUnauthorized: false },
      () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

const fingerprintOf = (certFile: string) =>
  new X509Certificate(readFileSync(certFile)).fingerprint256;

beforeAll(async () => {
  makeCertificate(cert, key);
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});

afterAll(async () => {
  await service?.stop();
  await topology?.cleanup();
});

function configFile(
  name: string,
  tls: { cert: string; key: string; http2?: boolean },
  http: Record<string, unknown> = {},
): Promise<string> {
  return demoTenantYaml().then((tenants) =>
    temp.write(
      name,
      `${tenants}${stringify({
        dataDirectory: path.join(temp.dir, 'data'),
        pipelinesDirectory: path.join(temp.dir, 'no-pipelines'),
        broker: {
          exchange: topology.exchange,
          queues: [{ name: topology.queue, bindingKeys: ['#'] }],
        },
        http: { ...http, tls },
      })}`,
    ),
  );
}

/** One request over TLS, trusting only the test's certificate. */
function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      { method: init.method ?? 'GET', headers: init.headers, ca: readFileSync(cert) },
      (res) => {
        const protocol = (res.socket as TLSSocket).getProtocol() ?? '';
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body, protocol }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

describe.each([{ http2: false }, { http2: true }])('HTTPS (http2: $http2)', ({ http2 }) => {
  it('answers a batch over HTTP/1.1 + TLS with 202, the records on the broker; the header limit holds there', async () => {
    await service?.stop();
    const queued = await topology.count();
    service = await startService({
      env: {
        INGEST_CONFIG: await configFile('tls.yaml', { cert, key, http2 }),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ destination: logs }),
    });
    expect(service.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(service.adminUrl).toMatch(/^http:\/\//); // the admin listener stays plain
    const orders = readFileSync(
      new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
      'utf8',
    );

    const accepted = await request(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth(DEMO_WITH_BROKER) },
      body: orders,
    });
    expect(accepted.status).toBe(202);
    expect(accepted.protocol).toMatch(/^TLSv1\.[23]$/);
    expect(JSON.parse(accepted.body)).toMatchObject({ success: true, recordCount: 3 });
    expect(await topology.count()).toBe(queued + 3);

    const tooLarge = await request(`${service.url}/healthz`, {
      headers: { 'x-filler': 'x'.repeat(20_000) },
    });
    expect(tooLarge.status).toBe(431);
    expect(JSON.parse(tooLarge.body)).toMatchObject({ type: '/problems/header-fields-too-large' });
  });

  it('closes connections that never finish their handshake, and holds no descriptor for them after', async () => {
    const stalledLogs = new LogCapture();
    const stalled = await startService({
      env: {
        // The handshake must end within requestTimeoutMs (at most 60 s).
        INGEST_CONFIG: await configFile(
          'stalled.yaml',
          { cert, key, http2 },
          { requestTimeoutMs: 1000 },
        ),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ destination: stalledLogs }),
    });
    const clients: HeldConnection[] = [];
    try {
      const port = Number(new URL(stalled.url).port);
      const baseline = heldConnections(port);
      // Half say nothing, half start a ClientHello they never finish (a 200-byte record, 9 bytes sent).
      const partialHello = Buffer.from('16030100c8010000c40303', 'hex');
      clients.push(
        ...(await Promise.all(
          Array.from({ length: STALLED }, (_, i) =>
            holdConnection(stalled.url, i % 2 ? partialHello : undefined),
          ),
        )),
      );
      await expect.poll(() => heldConnections(port)).toBe(baseline + STALLED);
      // Plain HTTP to the TLS port: its handshake fails at once.
      const plain = await Promise.all(
        [1, 2, 3].map(() =>
          holdConnection(stalled.url, 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'),
        ),
      );
      clients.push(...plain);

      // Past the handshake timeout, the service closes each of them itself…
      await vi.waitFor(() => expect(clients.filter((c) => !c.closed()).length).toBe(0), {
        timeout: 15_000,
        interval: 100,
      });
      // …without writing anything into them (no plaintext 400 into a TLS handshake)…
      expect(clients.map((c) => c.received().length)).toEqual(clients.map(() => 0));
      // …and holds no descriptor for them.
      await expect.poll(() => heldConnections(port), { timeout: 5000 }).toBe(baseline);

      // Counted by reason (the others at 0), and logged once, not once per connection.
      const metrics = await (await fetch(`${stalled.adminUrl}/metrics`)).text();
      const series = (name: string) =>
        metrics.split('\n').filter((line) => line.startsWith(`warehouse_ingest_http_${name}{`));
      expect(series('connections_dropped_total')).toEqual([
        `warehouse_ingest_http_connections_dropped_total{listener="public",reason="limit"} 0`,
        `warehouse_ingest_http_connections_dropped_total{listener="public",reason="handshake-timeout"} ${STALLED}`,
        `warehouse_ingest_http_connections_dropped_total{listener="public",reason="client-error"} 3`,
        `warehouse_ingest_http_connections_dropped_total{listener="admin",reason="limit"} 0`,
        `warehouse_ingest_http_connections_dropped_total{listener="admin",reason="client-error"} 0`,
      ]);
      expect(series('open_connections')).toContain(
        'warehouse_ingest_http_open_connections{listener="public"} 0',
      );
      expect(stalledLogs.lines.filter((l) => l.reason === 'handshake-timeout')).toEqual([
        expect.objectContaining({ listener: 'public', connections: 1, level: 'info' }),
      ]);
      expect(stalledLogs.raw.join('')).not.toContain('request refused before routing');
    } finally {
      for (const client of clients) client.close();
      await stalled.stop();
    }
  });

  it('a stop closes a connection still in its handshake once the grace time is over, not at its handshake timeout', async () => {
    const stopping = await startService({
      env: {
        // A handshake may take 60 s here, longer than this test may.
        INGEST_CONFIG: await configFile(
          'stop.yaml',
          { cert, key, http2 },
          { requestTimeoutMs: 120_000 },
        ),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
        INGEST_SHUTDOWN__GRACE_MS: '200',
      },
      log: createLogger({ level: 'silent' }),
    });
    const port = Number(new URL(stopping.url).port);
    const client = await holdConnection(stopping.url);
    await expect.poll(() => heldConnections(port)).toBe(1);
    await stopping.stop();
    expect(heldConnections(port)).toBe(0);
    await vi.waitFor(() => expect(client.closed()).toBe(true), { timeout: 5000, interval: 50 });
  });

  it('serves a renewed certificate after a reload (SIGHUP), and keeps the old one when the new pair is broken', async () => {
    const liveCert = path.join(temp.dir, 'live-cert.pem');
    const liveKey = path.join(temp.dir, 'live-key.pem');
    copyFileSync(cert, liveCert);
    copyFileSync(key, liveKey);
    chmodSync(liveKey, 0o600);
    const reloadLogs = new LogCapture();
    const running = await startService({
      env: {
        INGEST_CONFIG: await configFile('reload.yaml', { cert: liveCert, key: liveKey, http2 }),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ destination: reloadLogs }),
    });
    try {
      expect(await servedFingerprint(running.url)).toBe(fingerprintOf(cert));
      // Renewed in place, as certbot or cert-manager do.
      makeCertificate(liveCert, liveKey);
      const renewed = fingerprintOf(liveCert);
      expect(renewed).not.toBe(fingerprintOf(cert));
      expect(running.reload()).toBe(true);
      expect(await servedFingerprint(running.url)).toBe(renewed);
      expect(
        reloadLogs.lines.find((l) => String(l.msg).startsWith('TLS certificate reloaded')),
      ).toMatchObject({
        certificate: { fingerprint256: renewed },
      });
      // A key that does not belong to the certificate: refused, the served pair stays.
      copyFileSync(key, liveKey);
      expect(running.reload()).toBe(false);
      expect(await servedFingerprint(running.url)).toBe(renewed);
    } finally {
      await running.stop();
    }
  });

  it('refuses to start with a key file that others may read, naming the field', async () => {
    const exposed = temp.write('exposed-key.pem', readFileSync(key, 'utf8'), 0o644);
    const starting = startService({
      env: {
        INGEST_CONFIG: await configFile('exposed.yaml', { cert, key: exposed, http2 }),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ level: 'silent' }),
    });
    await expect(starting).rejects.toBeInstanceOf(ConfigError);
    await expect(starting).rejects.toThrow(/http\.tls\.key.*chmod 600/s);
  });
});

/** The protocol ALPN picks for a TLS client offering h2 and http/1.1 (false: none). */
function negotiated(url: string): Promise<string | false> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      {
        host: hostname,
        port: Number(port),
        ca: readFileSync(cert),
        ALPNProtocols: ['h2', 'http/1.1'],
      },
      () => {
        resolve(socket.alpnProtocol ?? false);
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

describe('HTTP/2 over TLS (http.tls.http2)', () => {
  it('is offered only when asked: without it, ALPN picks http/1.1 for a client offering h2', async () => {
    const plain = await startService({
      env: {
        INGEST_CONFIG: await configFile('alpn-off.yaml', { cert, key }),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ level: 'silent' }),
    });
    try {
      expect(await negotiated(plain.url)).toBe('http/1.1');
    } finally {
      await plain.stop();
    }
  });

  it('answers a batch POSTed by a node:http2 client with 202, the records on the broker; a request not received in time is reset; a stop sends GOAWAY and ends', async () => {
    const h2Logs = new LogCapture();
    const running = await startService({
      env: {
        INGEST_CONFIG: await configFile(
          'h2.yaml',
          { cert, key, http2: true },
          { requestTimeoutMs: 1500 },
        ),
        AMQP_URL,
        PORT: '0',
        ADMIN_PORT: '0',
      },
      log: createLogger({ destination: h2Logs }),
    });
    const session = http2.connect(running.url, { ca: readFileSync(cert) });
    try {
      expect(await negotiated(running.url)).toBe('h2');
      const queued = await topology.count();
      const orders = readFileSync(
        new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
        'utf8',
      );
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/api/v2/sales-orders',
          'content-type': 'application/json',
          authorization: basicAuth(DEMO_WITH_BROKER),
        });
        let status = 0;
        let body = '';
        stream.on('response', (headers) => (status = Number(headers[':status'])));
        stream.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        stream.on('end', () => resolve({ status, body }));
        stream.on('error', reject);
        stream.end(orders);
      });
      expect(answer.status).toBe(202);
      expect(JSON.parse(answer.body)).toMatchObject({ success: true, recordCount: 3 });
      expect(await topology.count()).toBe(queued + 3);

      // A body that never arrives whole: the stream is reset after requestTimeoutMs, the session lives on.
      const slow = session.request({
        ':method': 'POST',
        ':path': '/api/v2/sales-orders',
        'content-type': 'application/json',
        'content-length': '100',
        authorization: basicAuth(DEMO_WITH_BROKER),
      });
      slow.on('error', () => undefined);
      slow.write('[');
      const started = Date.now();
      await new Promise((resolve) => slow.once('close', resolve));
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(slow.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
      expect(session.closed).toBe(false);
      expect(h2Logs.lines.map((l) => l.msg)).toContain(
        'HTTP/2 request not received in time: stream reset',
      );

      // HTTP/1.1 on the same server keeps its own time-out (Node's default there would be 300 s).
      const { hostname, port } = new URL(running.url);
      const slowHttp1 = await new Promise<{ head: string; ms: number }>((resolve, reject) => {
        const begun = Date.now();
        const socket = tlsConnect(
          {
            host: hostname,
            port: Number(port),
            ca: readFileSync(cert),
            ALPNProtocols: ['http/1.1'],
          },
          () =>
            socket.write(
              `POST /api/v2/sales-orders HTTP/1.1\r\nhost: x\r\nauthorization: ${basicAuth(DEMO_WITH_BROKER)}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n[`,
            ),
        );
        let received = '';
        socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
        socket.on('close', () =>
          resolve({ head: received.split('\r\n')[0]!, ms: Date.now() - begun }),
        );
        socket.on('error', reject);
      });
      expect(slowHttp1.head).toBe('HTTP/1.1 408 Request Timeout');
      expect(slowHttp1.ms).toBeLessThan(10_000);

      // The open session does not hold a stop: the service says GOAWAY and closes it.
      const goaway = new Promise((resolve) => session.once('goaway', resolve));
      await running.stop();
      await goaway;
      await vi.waitFor(() => expect(session.closed || session.destroyed).toBe(true));
    } finally {
      session.destroy();
      await running.stop();
    }
  });
});

describe('lint and serve check the TLS pair the same way', () => {
  it('both refuse a key others may read, and a key that is not the certificate’s, naming the field', async () => {
    const exposed = temp.write('lint-exposed-key.pem', readFileSync(key, 'utf8'), 0o644);
    const otherCert = path.join(temp.dir, 'other-cert.pem');
    const otherKey = path.join(temp.dir, 'other-key.pem');
    makeCertificate(otherCert, otherKey);
    mkdirSync(path.join(temp.dir, 'no-pipelines'), { recursive: true }); // lint wants the folder
    const cases = [
      { files: { cert, key: exposed }, refusal: /http\.tls\.key.*chmod 600/s },
      { files: { cert, key: otherKey }, refusal: /http\.tls.*do not form a pair/s },
    ];
    for (const { files, refusal } of cases) {
      const config = await configFile(`lint-${path.basename(files.key)}.yaml`, files);
      // Before the fix, lint said "configuration valid" for both (issue 38, item 20).
      const lint = await runCli(['lint'], { env: { INGEST_CONFIG: config, AMQP_URL } });
      expect(lint.code, lint.stdout).toBe(1);
      expect(lint.stderr).toMatch(refusal);
      const starting = startService({
        env: { INGEST_CONFIG: config, AMQP_URL, PORT: '0', ADMIN_PORT: '0' },
        log: createLogger({ level: 'silent' }),
      });
      await expect(starting).rejects.toBeInstanceOf(ConfigError);
      await expect(starting).rejects.toThrow(refusal);
    }
  });
});
