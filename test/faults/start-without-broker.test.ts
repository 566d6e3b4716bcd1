import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { killIfRunning, startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from '../support/http-app.js';
import { drainQueue } from '../support/queue-audit.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';

/**
 * `warehouse-ingest serve` started while its broker cannot be reached (issue 38, item 3): the
 * broker behind a proxy that resets every connection at first. The process stays up, `/readyz`
 * answers 503 and a batch `503` with `Retry-After` (problem details); once the proxy lets
 * connections through, `/readyz` answers 200, a batch 202 with its record on the queue, the events
 * consumer starts consuming and the drop's file is taken.
 */
const AUTH = basicAuth(DEMO_WITH_BROKER);

const TEMPLATE = JSON.stringify(
  (
    JSON.parse(
      readFileSync(new URL('../../fixtures/sales-orders/valid.json', import.meta.url), 'utf8'),
    ) as unknown[]
  )[0],
);

/** One v2 sales order of DEMO's, named by its shipment id. */
function order(shipmentId: string): string {
  return `[${TEMPLATE.replaceAll('SO-2026-000187', shipmentId).replaceAll('"ACME"', '"DEMO"')}]`;
}

describe('serve started while the broker is unreachable', () => {
  let proxy: TcpProxy | undefined;
  let service: CliWorker | undefined;
  const exchange = uniqueName('start-without-broker.x');
  const queue = uniqueName('start-without-broker.q');
  const eventsExchange = uniqueName('start-without-broker.events');
  const eventsQueue = uniqueName('start-without-broker.events.q');

  afterAll(async () => {
    if (service) await stopCli(service, 'SIGTERM', 15_000);
    killIfRunning(service);
    await proxy?.close();
    const model = await connect(AMQP_URL);
    const channel = await model.createChannel();
    for (const q of [queue, eventsQueue]) await channel.deleteQueue(q).catch(() => undefined);
    await model.close().catch(() => undefined);
  });

  it('stays up answering 503 + Retry-After, then takes batches and the drop once the broker comes', {
    timeout: 120_000,
  }, async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(AMQP_URL).port) });
    proxy.cut({ refuse: true }); // every connection reset at once, as `read ECONNRESET` in the issue
    const temp = tempFolder('start-without-broker-');
    const pipelines = path.join(temp.dir, 'pipelines');
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(pipelines);
    mkdirSync(drop);
    temp.write(
      'pipelines/waiting.yaml',
      [
        'name: waiting',
        'businessId: DEMO',
        'kind: sales-orders',
        'format: v1-csv',
        `source: { type: local, path: ${drop} }`,
        'readiness: { strategy: rename }',
        'schedule: { pollIntervalMs: 200 }',
      ].join('\n'),
    );
    const config = temp.write(
      'config.yaml',
      [
        `dataDirectory: ${temp.dir}/data`,
        `pipelinesDirectory: ${pipelines}`,
        'broker:',
        `  exchange: ${exchange}`,
        `  queues: [{ name: ${queue}, bindingKeys: ["#"] }]`,
        '  reconnect: { initialDelayMs: 100, maxDelayMs: 500 }',
        `events: { exchange: ${eventsExchange}, queue: { name: ${eventsQueue} } }`,
        await demoTenantYaml(),
      ].join('\n'),
    );
    const started = await startServe(config, {
      AMQP_URL: proxy.urlFor(AMQP_URL),
      INGEST_ENV: 'development',
    });
    service = started.service;
    const { url } = started;
    const admin = String(
      service.lines.find((l) => String(l.msg).startsWith('listening on '))?.adminUrl,
    );
    writeFileSync(
      path.join(drop, 'orders.csv'),
      ordersCsv('WAITDROP', 1).replaceAll('ACME,', 'DEMO,'),
    );

    // Still up, and honest: not ready, and a batch refused with a time to come back.
    const notReady = await fetch(`${admin}/readyz`);
    expect(notReady.status).toBe(503);
    const refused = await fetch(`${url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: order('SO-WAIT-1'),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await vi.waitFor(() =>
      expect(
        service?.count(
          'request not accepted: publisher unavailable (the message broker did not take the batch)',
        ),
      ).toBe(1),
    );
    expect(service.child.exitCode).toBeNull();

    proxy.restore();
    await vi.waitFor(async () => expect((await fetch(`${admin}/readyz`)).status).toBe(200), {
      timeout: 20_000,
      interval: 100,
    });
    const accepted = await fetch(`${url}/api/v2/sales-orders`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: order('SO-WAIT-2'),
    });
    expect(accepted.status).toBe(202);
    await vi.waitFor(() => expect(service?.count('events: consuming')).toBe(1), {
      timeout: 20_000,
      interval: 100,
    });
    await vi.waitFor(() => expect(readdirSync(drop)).not.toContain('orders.csv'), {
      timeout: 20_000,
      interval: 100,
    });
    const messages = await vi.waitFor(
      async () => {
        const found = await drainQueue(AMQP_URL, queue);
        expect(found.length).toBeGreaterThanOrEqual(2);
        return found;
      },
      { timeout: 10_000, interval: 200 },
    );
    const bodies = messages.map((m) => m.body).join('\n');
    expect(bodies).toContain('SO-WAIT-2');
    expect(bodies).toContain('WAITDROP');
    expect(bodies).not.toContain('SO-WAIT-1');
    // Tried while the broker was away and kept (transient), never settled as failed.
    expect(readdirSync(drop, { recursive: true }).map(String)).not.toContain('failed');
    expect(service.child.exitCode).toBeNull();
  });
});
