/**
 * The PostgreSQL history behind a network that stops answering without closing anything (a
 * black hole: a TCP proxy that stops forwarding and keeps every socket open), issue 38 item 4.
 * `serve` as a process: every batch is still answered 202; a read answers 503 instead of hanging;
 * the writer says the store is unreachable (log, gauge, `/readyz` detail) and spools its rows to
 * disk; `serve` killed with SIGKILL meanwhile loses none of them: a fresh instance writes them all
 * once the network is back, and then has 0 rows pending.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { validRecords } from '../records/fixtures.js';
import { declareTestTopology, type TestTopology } from '../support/broker.js';
import { killIfRunning, startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';

const ACME = { businessId: 'ACME', apiKey: 'acme-history-black-hole-key-71c2' };
const [order] = validRecords('sales-orders');
const temp = tempFolder('history-black-hole-');
const data = path.join(temp.dir, 'data');

let database: Awaited<ReturnType<typeof freshDatabase>>;
let proxy: TcpProxy;
let topology: TestTopology;
let config: string;
const services: CliWorker[] = [];

beforeAll(async () => {
  database = await freshDatabase('black_hole');
  proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'history-black-hole' });
  config = temp.write(
    'config.yaml',
    stringify({
      environment: 'production',
      dataDirectory: data,
      tenants: [{ businessId: ACME.businessId, apiKeyHash: await hashApiKey(ACME.apiKey) }],
      broker: {
        exchange: topology.exchange,
        queues: [{ name: topology.queue, bindingKeys: ['#'] }],
      },
      history: { enabled: true, url: proxy.urlFor(database.url), flushMs: 50 },
    }),
  );
});

afterAll(async () => {
  for (const service of services) killIfRunning(service);
  proxy?.release();
  await proxy?.close();
  await topology?.cleanup();
  await database?.drop();
});

async function serve() {
  const started = await startServe(config);
  services.push(started.service);
  const listening = started.service.lines.find((l) => String(l.msg).startsWith('listening on '));
  return { ...started, adminUrl: String(listening?.adminUrl) };
}

async function accepted(url: string, tag: string): Promise<string> {
  const body = JSON.stringify([order]).replaceAll('"SO-2026-000187"', `"${tag}"`);
  const response = await fetch(`${url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basicAuth(ACME) },
    body,
  });
  expect(response.status, await response.clone().text()).toBe(202);
  return ((await response.json()) as { correlationId: string }).correlationId;
}

const read = (url: string, correlationId: string) =>
  fetch(`${url}/api/v2/batches/${correlationId}`, { headers: { authorization: basicAuth(ACME) } });

async function metric(adminUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

describe('history: PostgreSQL black-holed', () => {
  it('answers 202 and reads 503, spools the rows, and loses none of them to a kill -9', async () => {
    const first = await serve();
    const before = await accepted(first.url, 'SO-BH-0');
    await expect
      .poll(async () => (await read(first.url, before)).status, { timeout: 20_000 })
      .toBe(200);

    proxy.hold();
    const during: string[] = [];
    for (let n = 1; n <= 20; n++) during.push(await accepted(first.url, `SO-BH-${n}`));

    // A read past the queries' deadline: 503 with a problem, not a hang.
    const answer = await read(first.url, before);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    expect(((await answer.json()) as { type: string }).type).toBe('/problems/history-unavailable');

    // The writer's deadline passes too: said once, on the gauge and in /readyz's detail (still 200).
    await expect
      .poll(() => metric(first.adminUrl, 'warehouse_ingest_history_reachable'), { timeout: 30_000 })
      .toBe(0);
    // The line comes through the child's stdout, which may trail the gauge's scrape.
    await expect
      .poll(() =>
        first.service.count(
          'history unreachable: ingest and delivery go on; rows are kept (bounded, spooled to disk) and written when it is back',
        ),
      )
      .toBe(1);
    const readyz = await fetch(`${first.adminUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({
      history: { reachable: false, writes: 'unreachable' },
    });
    // Every row of the 20 batches (a batch and its record each) is on disk.
    await expect
      .poll(() => metric(first.adminUrl, 'warehouse_ingest_history_spooled_rows'), {
        timeout: 30_000,
      })
      .toBe(40);
    expect(readdirSync(path.join(data, 'history', 'spool')).length).toBeGreaterThan(0);

    first.service.child.kill('SIGKILL');
    await first.service.exited;
    proxy.release();

    // A fresh instance on the same data directory writes every spooled row, and has none pending.
    const fresh = await serve();
    for (const id of during)
      await expect
        .poll(async () => (await read(fresh.url, id)).status, { timeout: 30_000 })
        .toBe(200);
    await expect
      .poll(() => metric(fresh.adminUrl, 'warehouse_ingest_history_pending_rows'), {
        timeout: 10_000,
      })
      .toBe(0);
    expect(readdirSync(path.join(data, 'history', 'spool'))).toEqual([]);

    // Black-holed again, then back without a restart: 0 pending within seconds of its return.
    proxy.hold();
    const again = [
      await accepted(fresh.url, 'SO-BH-AGAIN-1'),
      await accepted(fresh.url, 'SO-BH-AGAIN-2'),
    ];
    await expect
      .poll(() => metric(fresh.adminUrl, 'warehouse_ingest_history_reachable'), { timeout: 30_000 })
      .toBe(0);
    proxy.release();
    await expect
      .poll(() => metric(fresh.adminUrl, 'warehouse_ingest_history_pending_rows'), {
        timeout: 15_000,
      })
      .toBe(0);
    expect(await metric(fresh.adminUrl, 'warehouse_ingest_history_reachable')).toBe(1);
    for (const id of again) expect((await read(fresh.url, id)).status).toBe(200);
    expect(existsSync(path.join(data, 'history', 'spool'))).toBe(true);
    expect((await stopCli(fresh.service, 'SIGTERM')).exit).toBe('code 0');
  }, 240_000);
});
