import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { killIfRunning, startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from '../support/http-app.js';
import { drainQueue } from '../support/queue-audit.js';
import { REDIS_URL, removeKeys, uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';

/**
 * `warehouse-ingest serve` started while its Redis cannot be reached (issue 38, item 3): Redis
 * behind a proxy that resets every connection at first. The process stays up, `/readyz` answers
 * 503 (never reached since start-up), an `Idempotency-Key` batch `503` with `Retry-After`; once the
 * proxy lets connections through, `/readyz` answers 200 and the keyed batch 202, on the queue.
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

describe('serve started while Redis is unreachable', () => {
  let proxy: TcpProxy | undefined;
  let service: CliWorker | undefined;
  const exchange = uniqueName('start-without-redis.x');
  const queue = uniqueName('start-without-redis.q');
  const eventsQueue = uniqueName('start-without-redis.events.q');
  const keyPrefix = uniquePrefix();

  afterAll(async () => {
    if (service) await stopCli(service, 'SIGTERM', 15_000);
    killIfRunning(service);
    await proxy?.close();
    await removeKeys(keyPrefix);
    const model = await connect(AMQP_URL);
    const channel = await model.createChannel();
    for (const q of [queue, eventsQueue]) await channel.deleteQueue(q).catch(() => undefined);
    await model.close().catch(() => undefined);
  });

  it('stays up, not ready, answering keyed batches 503 + Retry-After, then takes them once Redis comes', {
    timeout: 120_000,
  }, async () => {
    proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(REDIS_URL).port || 6379),
    });
    proxy.cut({ refuse: true });
    const temp = tempFolder('start-without-redis-');
    mkdirSync(path.join(temp.dir, 'pipelines'));
    const config = temp.write(
      'config.yaml',
      [
        `dataDirectory: ${temp.dir}/data`,
        `pipelinesDirectory: ${temp.dir}/pipelines`,
        'broker:',
        `  exchange: ${exchange}`,
        `  queues: [{ name: ${queue}, bindingKeys: ["#"] }]`,
        `events: { exchange: ${uniqueName('start-without-redis.events')}, queue: { name: ${eventsQueue} } }`,
        `sharedState: { redis: { keyPrefix: "${keyPrefix}" } }`,
        await demoTenantYaml(),
      ].join('\n'),
    );
    const started = await startServe(config, {
      REDIS_URL: proxy.urlFor(REDIS_URL),
      INGEST_ENV: 'development',
    });
    service = started.service;
    const { url } = started;
    const admin = String(
      service.lines.find((l) => String(l.msg).startsWith('listening on '))?.adminUrl,
    );
    const keyed = (shipmentId: string) =>
      fetch(`${url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: {
          authorization: AUTH,
          'content-type': 'application/json',
          'idempotency-key': shipmentId,
        },
        body: order(shipmentId),
      });

    const notReady = await fetch(`${admin}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({
      detail: expect.stringContaining('shared state: not reached since start-up'),
    });
    const refused = await keyed('SO-REDIS-1');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(service.child.exitCode).toBeNull();

    proxy.restore();
    await vi.waitFor(async () => expect((await fetch(`${admin}/readyz`)).status).toBe(200), {
      timeout: 20_000,
      interval: 100,
    });
    expect((await keyed('SO-REDIS-2')).status).toBe(202);
    const replayed = await keyed('SO-REDIS-2');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true'); // the key is kept in Redis
    const messages = await drainQueue(AMQP_URL, queue);
    expect(messages.map((m) => m.body).join('\n')).toContain('SO-REDIS-2');
    expect(messages).toHaveLength(1);
    expect(service.child.exitCode).toBeNull();
  });
});
