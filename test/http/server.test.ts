import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
import { heldConnections } from '../support/held-sockets.js';
import { type HeldConnection, holdConnection } from '../support/raw-http.js';
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

describe('connections over a real socket', () => {
  it('holds at most http.maxConnections: the ones past it are closed and counted, the admin listener still answers, and it serves again once they leave', async () => {
    const logs = new LogCapture();
    const service = await startService({
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_CONFIG: temp.write(
          'max-connections.yaml',
          `dataDirectory: ${temp.dir}/d4\nhttp:\n  maxConnections: 5\n`,
        ),
      },
      log: createLogger({ destination: logs }),
    });
    running.push(service);
    const port = Number(new URL(service.url).port);
    const scrape = async () => {
      const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
      return (name: string, labels: string) =>
        new RegExp(`^warehouse_ingest_http_${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1];
    };
    const clients: HeldConnection[] = [];
    try {
      // Five clients that say nothing fill the listener…
      for (let i = 0; i < 5; i += 1) clients.push(await holdConnection(service.url));
      await expect.poll(() => heldConnections(port)).toBe(5);
      // …and each one more is closed as soon as it is accepted.
      const extra = await Promise.all([1, 2, 3].map(() => holdConnection(service.url)));
      await vi.waitFor(() => expect(extra.filter((c) => !c.closed()).length).toBe(0), {
        timeout: 5000,
        interval: 50,
      });
      expect(extra.map((c) => c.received().length)).toEqual([0, 0, 0]);
      expect(clients.filter((c) => c.closed())).toEqual([]);
      expect(heldConnections(port)).toBe(5);

      // The admin listener has its own bound: probes and scrapes still get in.
      expect((await fetch(`${service.adminUrl}/healthz`)).status).toBe(200);
      const full = await scrape();
      expect(full('connections_dropped_total', 'listener="public",reason="limit"')).toBe('3');
      expect(full('connections_dropped_total', 'listener="admin",reason="limit"')).toBe('0');
      expect(full('open_connections', 'listener="public"')).toBe('5');
      expect(full('max_connections', 'listener="public"')).toBe('5');
      // One warn line for the first drop; the next ones are counted into a line a minute.
      expect(logs.lines.filter((l) => l.reason === 'limit')).toEqual([
        expect.objectContaining({
          level: 'warn',
          listener: 'public',
          connections: 1,
          maxConnections: 5,
          msg: 'connections refused: the public listener holds http.maxConnections (5)',
        }),
      ]);

      for (const client of clients.splice(0)) client.close();
      await expect.poll(() => heldConnections(port)).toBe(0);
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      expect(
        (await scrape())('connections_dropped_total', 'listener="public",reason="limit"'),
      ).toBe('3');
    } finally {
      for (const client of clients) client.close();
    }
  });
});
