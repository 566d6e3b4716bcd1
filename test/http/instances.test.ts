/**
 * Two `serve` processes behind one (imagined) load balancer, sharing one Redis: an
 * `Idempotency-Key` answered by one is replayed by the other, a duplicate still in flight on one
 * is refused by the other, and the rate limit and the login throttle hold across both.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { startCli, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth } from '../support/http-app.js';
import { REDIS_URL, removeKeys, uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';
import { validRecords } from '../records/fixtures.js';

// One business per test, so that each test's requests are its own against the shared limits.
const tenants = ['REPLAY', 'RATE', 'LOGIN', 'CONCURRENT'].map((businessId) => ({
  businessId,
  apiKey: `${businessId.toLowerCase()}-instances-key-51c0e2`,
}));
const [REPLAY, RATE, LOGIN, CONCURRENT] = tenants as [
  (typeof tenants)[number],
  (typeof tenants)[number],
  (typeof tenants)[number],
  (typeof tenants)[number],
];
const RATE_LIMIT = 4;

const temp = tempFolder('instances-');
const keyPrefix = uniquePrefix();
let topology: TestTopology;
let proxy: TcpProxy;
let redis: Redis;
const instances: Array<{ worker: CliWorker; url: string }> = [];

beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(AMQP_URL).port || 5672) });
  redis = new Redis(REDIS_URL);
  const pipelines = path.join(temp.dir, 'pipelines');
  mkdirSync(pipelines);
  const config = temp.write(
    'config.yaml',
    stringify({
      environment: 'production',
      dataDirectory: path.join(temp.dir, 'data'),
      pipelinesDirectory: pipelines,
      tenants: await Promise.all(
        tenants.map(async (t) => ({
          businessId: t.businessId,
          apiKeyHash: await hashApiKey(t.apiKey),
        })),
      ),
      broker: {
        exchange: topology.exchange,
        queues: [{ name: topology.queue, bindingKeys: ['#'] }],
        reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
      },
      sharedState: { redis: { url: REDIS_URL, keyPrefix } },
      http: {
        abuse: {
          rateLimit: { requests: RATE_LIMIT, windowSeconds: 3600 },
          authThrottle: { maxFailuresPerClient: 2 },
        },
      },
    }),
  );
  for (let i = 0; i < 2; i++) {
    const worker = startCli(['serve'], {
      INGEST_CONFIG: config,
      AMQP_URL: proxy.urlFor(AMQP_URL),
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_PORT: '0',
    });
    instances.push({ worker, url: '' });
  }
  for (const instance of instances) {
    const started = await vi.waitFor(
      () => {
        const line = instance.worker.lines.find((l) => typeof l.url === 'string');
        if (!line) throw new Error(`not listening yet: ${instance.worker.stderr()}`);
        return line;
      },
      { timeout: 45_000, interval: 100 },
    );
    instance.url = String(started.url);
  }
});

afterAll(async () => {
  for (const { worker } of instances) await stopCli(worker, 'SIGTERM');
  redis?.disconnect();
  await proxy?.close();
  await topology?.cleanup();
  await removeKeys(keyPrefix);
});

const orders = validRecords('sales-orders');
function ordersOf(businessId: string): unknown[] {
  return JSON.parse(JSON.stringify(orders).replaceAll('"ACME"', `"${businessId}"`)) as unknown[];
}

function post(
  at: 0 | 1,
  tenant: { businessId: string; apiKey: string },
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${instances[at]!.url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basicAuth(tenant), ...headers },
    body: JSON.stringify(body),
  });
}

describe('two instances sharing one Redis', () => {
  it('a retry on the other instance gets the stored answer, and nothing is published twice', async () => {
    const body = ordersOf(REPLAY.businessId);
    const key = { 'idempotency-key': 'shared-replay-1' };
    const first = await post(0, REPLAY, body, key);
    expect(first.status).toBe(202);
    const text = await first.text();

    const retry = await post(1, REPLAY, body, key);
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.text()).toBe(text);
    // The same key with another body is another request, on either instance.
    expect((await post(1, REPLAY, body.slice(0, 1), key)).status).toBe(422);
    expect((await topology.messages()).length).toBe(orders.length);
  });

  it('a duplicate arriving at the other instance while the first is in flight is answered 409', async () => {
    const body = ordersOf(CONCURRENT.businessId);
    const key = { 'idempotency-key': 'shared-concurrent-1' };
    proxy.hold(); // no confirms come back: the first request stays in flight
    let first: Promise<Response> | undefined;
    try {
      first = post(0, CONCURRENT, body, key);
      // The first instance has claimed the key once it is on Redis.
      await expect
        .poll(() => redis.keys(`${keyPrefix}idempotency:${CONCURRENT.businessId}*`), {
          timeout: 15_000,
        })
        .toHaveLength(1);
      const duplicate = await post(1, CONCURRENT, body, key);
      expect(duplicate.status).toBe(409);
      expect(duplicate.headers.get('retry-after')).toBe('1');
      expect(await duplicate.json()).toMatchObject({ type: '/problems/idempotency-key-in-use' });
    } finally {
      proxy.release();
    }
    expect((await first).status).toBe(202);
    const replay = await post(1, CONCURRENT, body, key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await topology.messages()).length).toBe(orders.length);
  });

  it('the rate limit holds across both: the quota is spent on either instance', async () => {
    const statuses: number[] = [];
    // An empty batch is refused (400) after admission: each request takes a token, nothing is published.
    for (let i = 0; i < RATE_LIMIT; i++)
      statuses.push((await post((i % 2) as 0 | 1, RATE, [])).status);
    expect(statuses).toEqual(Array(RATE_LIMIT).fill(400));
    for (const at of [0, 1] as const) {
      const refused = await post(at, RATE, []);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
    }
  });

  it('the login throttle holds across both: failures on either count for the pair', async () => {
    const wrong = { businessId: LOGIN.businessId, apiKey: 'not-the-key' };
    expect((await post(0, wrong, [])).status).toBe(401);
    expect((await post(1, wrong, [])).status).toBe(401);
    // Two failures for this pair in all (maxFailuresPerClient: 2): now refused on both instances.
    for (const at of [0, 1] as const) {
      const refused = await post(at, wrong, []);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });
});
