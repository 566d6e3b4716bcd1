import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { runCli } from '../support/cli-process.js';
import { LogCapture } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/**
 * `serve` with the history on a database of this file's own: accepted and refused HTTP batches
 * and a dropped file's outcome are written there, off the request path, and read back by another
 * store on the same database (as another instance of a fleet would).
 */
const temp = tempFolder('history-http-');
const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
const orders = readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url));

let database: Awaited<ReturnType<typeof freshDatabase>>;
let service: RunningService;
let reader: HistoryStore;
let cliEnv: NodeJS.ProcessEnv;
const logs = new LogCapture();

beforeAll(async () => {
  database = await freshDatabase('serve');
  const pipelines = path.join(temp.dir, 'pipelines');
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(pipelines);
  mkdirSync(drop);
  temp.write(
    'pipelines/demo-drop.yaml',
    stringify({
      name: 'demo-drop',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v2-json',
      source: { type: 'local', path: drop },
      readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
    }),
  );
  copyFileSync(
    new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
    path.join(drop, 'orders.json'),
  );
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${pipelines}`,
      'history:',
      '  enabled: true',
      '  flushMs: 10',
    ].join('\n'),
  );
  cliEnv = { INGEST_CONFIG: config, INGEST_ENV: 'development', HISTORY_URL: database.url };
  service = await startService({
    env: { ...cliEnv, PORT: '0', ADMIN_PORT: '0' },
    log: createLogger({ destination: logs }),
  });
  reader = createPostgresHistory({ url: database.url });
});

afterAll(async () => {
  await service?.stop();
  await reader?.close();
  await database?.drop();
});

const post = (body: string | Buffer) =>
  fetch(`${service.url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { authorization: DEMO, 'content-type': 'application/json' },
    body,
  });

describe('history: HTTP batches', () => {
  it('keeps an accepted batch with its records: business key → message id → batch', async () => {
    const response = await post(orders);
    expect(response.status).toBe(202);
    const answer = (await response.json()) as { correlationId: string; messageIds: string[] };
    await vi.waitFor(
      async () =>
        expect(await reader.batches({ businessId: 'DEMO' }, answer.correlationId)).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
    const [batch] = await reader.batches({ businessId: 'DEMO' }, answer.correlationId);
    expect(batch).toMatchObject({
      businessId: 'DEMO',
      source: { endpoint: '/api/v2/sales-orders' },
      kind: 'sales-orders',
      outcome: 'accepted',
      recordCount: answer.messageIds.length,
      messageIds: answer.messageIds,
    });
    const reference = (
      JSON.parse(orders.toString()) as { identifiers: { shipmentId: string } }[]
    )[0]!.identifiers.shipmentId;
    const records = await reader.records({ businessId: 'DEMO' }, reference);
    expect(records.map((r) => r.messageId)).toContain(answer.messageIds[0]);
    expect(await reader.records({ businessId: 'OTHER' }, reference)).toEqual([]);
  });

  it('keeps a refused batch with its problem details', async () => {
    const response = await post(JSON.stringify([{ identifiers: {} }]));
    expect(response.status).toBe(400);
    const correlationId = response.headers.get('x-correlation-id')!;
    expect(correlationId).toBeTruthy();
    await vi.waitFor(
      async () =>
        expect(await reader.batches({ businessId: 'DEMO' }, correlationId)).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
    const [batch] = await reader.batches({ businessId: 'DEMO' }, correlationId);
    expect(batch).toMatchObject({
      outcome: 'rejected',
      messageIds: [],
      problem: { status: 400, type: expect.stringContaining('validation-failed') },
    });
  });
});

describe('history: dropped files', () => {
  it("keeps a dropped file's outcome, its receipt and its records with their file", async () => {
    const reference = (
      JSON.parse(orders.toString()) as { identifiers: { shipmentId: string } }[]
    )[0]!.identifiers.shipmentId;
    const fromDrop = async () =>
      (await reader.records({ businessId: 'DEMO' }, reference)).filter(
        (r) => 'pipeline' in r.batch.source,
      );
    await vi.waitFor(async () => expect(await fromDrop()).toHaveLength(1), {
      timeout: 20_000,
      interval: 100,
    });
    const [record] = await fromDrop();
    expect(record!.batch).toMatchObject({
      source: { pipeline: 'demo-drop', fileName: 'orders.json' },
      kind: 'sales-orders',
      outcome: 'accepted',
      receipt: { outcome: 'accepted', pipeline: 'demo-drop' },
    });
    const [batch] = await reader.batches({ businessId: 'DEMO' }, record!.batch.correlationId);
    expect(batch!.messageIds).toContain(record!.messageId);
    expect(batch!.recordCount).toBe(batch!.messageIds.length);
  });
});

describe('lineage on the history', () => {
  it('finds a batch another instance accepted, scoped by --business when given; no journal is written beside it', async () => {
    const body = JSON.parse(orders.toString()) as Array<{ identifiers: Record<string, string> }>;
    body[0]!.identifiers.shipmentId = 'SO-LINEAGE-1';
    const response = await post(JSON.stringify([body[0]]));
    expect(response.status).toBe(202);
    const answer = (await response.json()) as { correlationId: string; messageIds: string[] };
    await vi.waitFor(
      async () =>
        expect(await reader.records({ businessId: 'DEMO' }, 'SO-LINEAGE-1')).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
    const found = await runCli(['lineage', 'SO-LINEAGE-1', '--json'], { env: cliEnv });
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({
      source: 'history',
      reference: 'SO-LINEAGE-1',
      businessId: 'DEMO',
      endpoint: '/api/v2/sales-orders',
      correlationId: answer.correlationId,
      messageId: answer.messageIds[0],
      outcome: 'accepted',
      index: 0,
    });
    const text = await runCli(['lineage', 'SO-LINEAGE-1'], { env: cliEnv });
    expect(text.stdout).toContain(`correlation ${answer.correlationId}, accepted`);
    const other = await runCli(['lineage', 'SO-LINEAGE-1', '--business', 'OTHER'], {
      env: cliEnv,
    });
    expect(other.code).toBe(1);
    expect(other.stdout).toBe('');
    // The history holds the lineage: the per-instance HTTP journal is not written meanwhile.
    expect(existsSync(path.join(temp.dir, 'data', 'lineage'))).toBe(false);
  }, 60_000);
});
