import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { LogCapture } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { tempFolder } from '../support/temp.js';

/**
 * The history's PostgreSQL cut off (a TCP proxy that refuses) while batches arrive: every batch
 * is still accepted at once, what could not be written is counted and said once, and it is all
 * written when PostgreSQL is back.
 */
const temp = tempFolder('history-outage-');
const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
const [demo] = JSON.parse(
  readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url), 'utf8'),
) as Array<{ identifiers: Record<string, string> }>;

let database: Awaited<ReturnType<typeof freshDatabase>>;
let proxy: TcpProxy;
let service: RunningService;
let reader: HistoryStore;
const logs = new LogCapture();

beforeAll(async () => {
  database = await freshDatabase('outage');
  proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  service = await startService({
    env: {
      INGEST_CONFIG: temp.write(
        'config.yaml',
        [`dataDirectory: ${temp.dir}/data`, 'history:', '  enabled: true', '  flushMs: 10'].join(
          '\n',
        ),
      ),
      INGEST_ENV: 'development',
      PORT: '0',
      ADMIN_PORT: '0',
      HISTORY_URL: proxy.urlFor(database.url),
    },
    log: createLogger({ destination: logs }),
  });
  reader = createPostgresHistory({ url: database.url });
});

afterAll(async () => {
  await service?.stop();
  await reader?.close();
  await proxy?.close();
  await database?.drop();
});

async function accepted(n: number): Promise<string> {
  const body = [{ ...demo, identifiers: { ...demo!.identifiers, shipmentId: `OUT-${n}` } }];
  const response = await fetch(`${service.url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { authorization: DEMO, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { correlationId: string }).correlationId;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

const said = (start: string) => logs.lines.filter((l) => String(l.msg).startsWith(start)).length;

describe('history: PostgreSQL cut off under HTTP load', () => {
  it('accepts every batch, counts what waits, and writes it all when PostgreSQL is back', async () => {
    const first = await accepted(0);
    await vi.waitFor(
      async () => expect(await reader.batches({ businessId: 'DEMO' }, first)).toHaveLength(1),
      { timeout: 20_000, interval: 100 },
    );
    expect(await metric('warehouse_ingest_history_deferred_rows_total')).toBe(0);

    proxy.cut({ refuse: true });
    const during: string[] = [];
    for (let n = 1; n <= 5; n++) during.push(await accepted(n));
    await vi.waitFor(
      async () => expect(await metric('warehouse_ingest_history_reachable')).toBe(0),
      { timeout: 20_000, interval: 100 },
    );
    expect(await metric('warehouse_ingest_history_deferred_rows_total')).toBeGreaterThan(0);
    expect(await metric('warehouse_ingest_history_dropped_rows_total')).toBe(0);
    expect(said('history unreachable')).toBe(1);
    // A detail on /readyz, never a reason to be not ready: ingest goes on.
    const readyz = await fetch(`${service.adminUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({
      status: 'ready',
      history: { reachable: false, pendingRows: expect.any(Number) },
    });

    proxy.restore();
    await vi.waitFor(
      async () => {
        for (const id of during)
          expect(await reader.batches({ businessId: 'DEMO' }, id)).toHaveLength(1);
      },
      { timeout: 40_000, interval: 200 },
    );
    expect(await metric('warehouse_ingest_history_reachable')).toBe(1);
    expect(await metric('warehouse_ingest_history_pending_rows')).toBe(0);
    expect(said('history unreachable')).toBe(1);
    expect(said('history reachable again')).toBe(1);
    expect(await (await fetch(`${service.adminUrl}/readyz`)).json()).toMatchObject({
      history: { reachable: true, pendingRows: 0 },
    });
  }, 90_000);
});
