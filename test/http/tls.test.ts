/**
 * HTTPS (`http.tls`): the service started as `serve` starts it, with a certificate made here by
 * openssl, answers a real batch over HTTP/1.1 + TLS with 202 (the records on the broker), keeps
 * its header-size limit there, and refuses a key file others may read.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml, LogCapture } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('tls-');
const cert = path.join(temp.dir, 'cert.pem');
const key = path.join(temp.dir, 'key.pem');
let topology: TestTopology;
let service: RunningService | undefined;
const logs = new LogCapture();

beforeAll(async () => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});

afterAll(async () => {
  await service?.stop();
  await topology?.cleanup();
});

function configFile(name: string, tls: { cert: string; key: string }): Promise<string> {
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
        http: { tls },
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

describe('HTTPS', () => {
  it('answers a batch over HTTP/1.1 + TLS with 202, the records on the broker; the header limit holds there', async () => {
    service = await startService({
      env: {
        INGEST_CONFIG: await configFile('tls.yaml', { cert, key }),
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
    expect(await topology.count()).toBe(3);

    const tooLarge = await request(`${service.url}/healthz`, {
      headers: { 'x-filler': 'x'.repeat(20_000) },
    });
    expect(tooLarge.status).toBe(431);
    expect(JSON.parse(tooLarge.body)).toMatchObject({ type: '/problems/header-fields-too-large' });
  });

  it('refuses to start with a key file that group or others may read, naming the field', async () => {
    const exposed = temp.write('exposed-key.pem', readFileSync(key, 'utf8'), 0o644);
    const starting = startService({
      env: {
        INGEST_CONFIG: await configFile('exposed.yaml', { cert, key: exposed }),
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
