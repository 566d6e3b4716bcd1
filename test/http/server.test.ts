import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology } from '../support/broker.js';
import {
  ACME,
  DEMO_WITH_BROKER,
  LogCapture,
  answer,
  basicAuth,
  demoTenantYaml,
  growingBody,
} from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder();
const running: RunningService[] = [];
afterEach(async () => {
  for (const service of running.splice(0)) await service.stop();
});

/** The README's curl example posts this file as DEMO. */
function demoOrders(): unknown[] {
  return JSON.parse(
    readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url), 'utf8'),
  ) as unknown[];
}

describe('the service over a real socket', () => {
  it('runs on the embedded defaults alone: demo tenant, embedded publisher writing NDJSON durably', async () => {
    const data = path.join(temp.dir, 'embedded');
    const logs = new LogCapture();
    const service = await startService({
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_CONFIG: temp.write('embedded.yaml', `dataDirectory: ${data}\n`),
      },
      log: createLogger({ destination: logs }),
    });
    running.push(service);
    expect(service.publisher.name).toBe('embedded');
    expect(logs.lines.find((l) => String(l.msg).startsWith('listening on '))).toMatchObject({
      publisher: 'embedded',
    });

    const response = await fetch(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: basicAuth({ businessId: 'DEMO', apiKey: 'demo-api-key' }),
      },
      body: JSON.stringify(demoOrders()),
    });
    expect(response.status).toBe(202);
    const { messageIds } = await answer(response);

    const outbox = path.join(data, 'outbox');
    const files = readdirSync(outbox).filter((f) => f.endsWith('.ndjson'));
    const lines = files
      .flatMap((f) => readFileSync(path.join(outbox, f), 'utf8').trim().split('\n'))
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.messageId)).toEqual(messageIds);
    expect(lines[0]).toMatchObject({
      routingKey: 'sales-orders.DEMO',
      type: 'sales-orders',
      record: { identifiers: { businessId: 'DEMO' } },
    });
  });

  it('publishes to RabbitMQ when AMQP_URL is set, and stops cleanly', async () => {
    const topology = await declareTestTopology({ bindingKeys: ['#'] });
    try {
      const config = temp.write(
        'rabbit.yaml',
        `dataDirectory: ${temp.dir}/rabbit\nbroker:\n  exchange: ${topology.exchange}\n  queues: [{ name: ${topology.queue}, bindingKeys: ["#"] }]\n${await demoTenantYaml()}`,
      );
      const service = await startService({
        env: { PORT: '0', ADMIN_PORT: '0', HOST: '127.0.0.1', AMQP_URL, INGEST_CONFIG: config },
        log: createLogger({ level: 'silent' }),
      });
      running.push(service);
      expect(service.publisher.name).toBe('rabbitmq');
      const response = await fetch(`${service.url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: basicAuth(DEMO_WITH_BROKER),
          'x-correlation-id': 'socket-1',
        },
        body: JSON.stringify(demoOrders()),
      });
      expect(response.status).toBe(202);
      expect(await topology.count()).toBe(3);
      expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200);
      await service.stop();
      await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
    } finally {
      await topology.cleanup();
    }
  });

  it('refuses to start with an invalid configuration, naming file and field', async () => {
    const bad = temp.write('bad.yaml', 'http:\n  port: -1\n');
    await expect(
      startService({ env: { INGEST_CONFIG: bad }, log: createLogger({ level: 'silent' }) }),
    ).rejects.toThrow(`${bad}: http.port:`);
  });

  it('is not fooled by the ACME test key: the demo config knows only DEMO', async () => {
    const service = await startService({
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_CONFIG: temp.write('demo.yaml', `dataDirectory: ${temp.dir}/d2\n`),
      },
      log: createLogger({ level: 'silent' }),
    });
    running.push(service);
    const response = await fetch(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth(ACME) },
      body: '[]',
    });
    expect(response.status).toBe(401);
  });
});

describe('bodies over a real socket', () => {
  it('answers 413 for a chunked body past the limit, and keeps serving', async () => {
    const service = await startService({
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_CONFIG: temp.write(
          'small.yaml',
          `dataDirectory: ${temp.dir}/d3\nhttp:\n  bodyLimitBytes: 65536\n`,
        ),
      },
      log: createLogger({ level: 'silent' }),
    });
    running.push(service);
    const body = growingBody(demoOrders()[0], 5_000_000);
    const auth = basicAuth({ businessId: 'DEMO', apiKey: 'demo-api-key' });
    const response = await fetch(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth },
      body,
      duplex: 'half',
    } as RequestInit).catch((error: unknown) => error);
    expect(response).toBeInstanceOf(Response);
    expect((response as Response).status).toBe(413);
    expect((await answer(response as Response)).type).toBe('/problems/payload-too-large');
    const after = await fetch(`${service.url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth },
      body: JSON.stringify(demoOrders()),
    });
    expect(after.status).toBe(202);
  });
});
