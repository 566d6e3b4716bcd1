/**
 * Two `serve` processes sharing one PostgreSQL history and one broker, each with its own port and
 * its own data directory (as a fleet behind a load balancer runs): a batch one instance accepted
 * is found from the other — by `lineage` on the other's configuration and by the other's partner
 * API — and only by the business that sent it.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';
import { validRecords } from '../records/fixtures.js';

const ACME = { businessId: 'ACME', apiKey: 'acme-fleet-history-key-3e8d10' };
const OTHER = { businessId: 'OTHER', apiKey: 'other-fleet-history-key-7b42c9' };

const temp = tempFolder('history-fleet-');
let database: Awaited<ReturnType<typeof freshDatabase>>;
let topology: TestTopology;
let reader: HistoryStore;
const instances: Record<'a' | 'b', { service: CliWorker; url: string; config: string }> =
  Object.create(null);

/** One instance's configuration: everything shared but its data directory (and its ports, 0). */
async function instanceConfig(name: string): Promise<string> {
  const pipelines = path.join(temp.dir, `pipelines-${name}`);
  mkdirSync(pipelines);
  return temp.write(
    `${name}.yaml`,
    stringify({
      environment: 'production',
      dataDirectory: path.join(temp.dir, `data-${name}`),
      pipelinesDirectory: pipelines,
      tenants: await Promise.all(
        [ACME, OTHER].map(async (t) => ({
          businessId: t.businessId,
          apiKeyHash: await hashApiKey(t.apiKey),
        })),
      ),
      // Polling the partner API until the writer flushed must not meet the rate limit.
      http: { abuse: { rateLimit: { requests: 10_000, windowSeconds: 60 } } },
      broker: {
        exchange: topology.exchange,
        queues: [{ name: topology.queue, bindingKeys: ['#'] }],
      },
      history: { enabled: true, url: database.url, flushMs: 20 },
    }),
  );
}

beforeAll(async () => {
  database = await freshDatabase('fleet');
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'history-fleet' });
  reader = createPostgresHistory({ url: database.url });
  // Started at once: the first write of each applies the migrations under the advisory lock.
  const configs = { a: await instanceConfig('a'), b: await instanceConfig('b') };
  const started = await Promise.all(
    (['a', 'b'] as const).map(async (name) => ({
      name,
      config: configs[name],
      ...(await startServe(configs[name], { AMQP_URL })),
    })),
  );
  for (const { name, ...instance } of started) instances[name] = instance;
}, 90_000);

afterAll(async () => {
  for (const instance of Object.values(instances)) await stopCli(instance.service, 'SIGTERM');
  await reader?.close();
  await topology?.cleanup();
  await database?.drop();
});

function orders(businessId: string, shipmentId: string): unknown[] {
  const [order] = validRecords('sales-orders');
  const text = JSON.stringify(order)
    .replaceAll('"ACME"', `"${businessId}"`)
    .replaceAll('"SO-2026-000187"', `"${shipmentId}"`);
  return [JSON.parse(text)];
}

async function post(
  at: 'a' | 'b',
  tenant: typeof ACME,
  body: unknown,
): Promise<{ correlationId: string; messageIds: string[] }> {
  const response = await fetch(`${instances[at].url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basicAuth(tenant) },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(202);
  return (await response.json()) as { correlationId: string; messageIds: string[] };
}

const batchAt = (at: 'a' | 'b', tenant: typeof ACME, correlationId: string) =>
  fetch(`${instances[at].url}/api/v2/batches/${encodeURIComponent(correlationId)}`, {
    headers: { authorization: basicAuth(tenant) },
  });

describe('two serve processes sharing one PostgreSQL history', () => {
  it("a batch accepted by A is found from B: lineage on B's configuration and B's partner API", async () => {
    const shipmentId = `SO-FLEET-${Date.now().toString(36)}`;
    const accepted = await post('a', ACME, orders(ACME.businessId, shipmentId));

    // Written off the request path: B answers once A's writer has flushed.
    await expect
      .poll(async () => (await batchAt('b', ACME, accepted.correlationId)).status, {
        timeout: 15_000,
        interval: 50,
      })
      .toBe(200);
    const answer = (await (await batchAt('b', ACME, accepted.correlationId)).json()) as Record<
      string,
      unknown
    >;
    expect(answer).toMatchObject({
      correlationId: accepted.correlationId,
      outcome: 'accepted',
      recordCount: 1,
      messageIds: accepted.messageIds,
    });

    const found = await runCli(['lineage', shipmentId, '--json'], {
      env: { INGEST_CONFIG: instances.b.config },
    });
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({
      source: 'history',
      reference: shipmentId,
      businessId: ACME.businessId,
      endpoint: '/api/v2/sales-orders',
      correlationId: accepted.correlationId,
      messageId: accepted.messageIds[0],
      outcome: 'accepted',
    });
    // The broker has it too, published by A.
    const published = await topology.messages();
    expect(published.map((m) => m.properties.messageId)).toContain(accepted.messageIds[0]);
  }, 60_000);

  it("another business's batch is not visible with the first business's credentials", async () => {
    const theirs = await post('b', OTHER, orders(OTHER.businessId, `SO-FLEET-OTHER-${Date.now()}`));
    // Known to the history (so the 404 below is the scope, not the writer lagging)…
    await expect
      .poll(
        async () =>
          (await reader.batches({ businessId: OTHER.businessId }, theirs.correlationId)).length,
        { timeout: 15_000, interval: 50 },
      )
      .toBe(1);
    expect((await batchAt('a', OTHER, theirs.correlationId)).status).toBe(200);
    // …and yet not to ACME, on either instance.
    for (const at of ['a', 'b'] as const) {
      const refused = await batchAt(at, ACME, theirs.correlationId);
      expect(refused.status).toBe(404);
      expect(await refused.json()).toMatchObject({ status: 404 });
    }
  }, 60_000);
});
