import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { LogCapture } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/**
 * `serve` with the history on a database of this file's own: accepted and refused HTTP batches
 * are written there, off the request path, and read back by another store on the same database
 * (as another instance of a fleet would).
 */
const temp = tempFolder('history-http-');
const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
const orders = readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url));

let database: Awaited<ReturnType<typeof freshDatabase>>;
let service: RunningService;
let reader: HistoryStore;
const logs = new LogCapture();

beforeAll(async () => {
  database = await freshDatabase('http');
  const config = temp.write(
    'config.yaml',
    [`dataDirectory: ${temp.dir}/data`, 'history:', '  enabled: true', '  flushMs: 10'].join('\n'),
  );
  service = await startService({
    env: {
      INGEST_CONFIG: config,
      INGEST_ENV: 'development',
      PORT: '0',
      ADMIN_PORT: '0',
      HISTORY_URL: database.url,
    },
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
