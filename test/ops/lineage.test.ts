import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { openHistory, type History } from '../../src/history/index.js';
import { createLogger } from '../../src/log.js';
import { validRecords } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';
import { jsonLines, lineage } from './lineage-cli.js';

/** ACME's v1 records are completed with the demo business's onboarding profile. */
const profile = stringify({
  onboarding: {
    ACME: {
      'sales-orders': loadConfig({ env: { INGEST_ENV: 'development' } }).onboarding.DEMO![
        'sales-orders'
      ],
    },
  },
});

/** Record numbers no other run has used. */
const tag = `${process.pid}-${Date.now().toString(36)}`;
const number = (name: string) => `LIN-${tag}-${name}`;

function salesOrder(shipmentId: string): Record<string, unknown> {
  const record = structuredClone(validRecords('sales-orders')[0]!) as {
    identifiers: { shipmentId: string };
  };
  record.identifiers.shipmentId = shipmentId;
  return record;
}

function workOrder(id: string): Record<string, unknown> {
  const record = structuredClone(validRecords('work-orders')[0]!) as {
    identifiers: { id: string };
  };
  record.identifiers.id = id;
  return record;
}

let t: TestApp;
/**
 * The environment of a `lineage` process: the configuration's defaults (the history on, embedded)
 * over the app's data folder, and no drop.
 */
let env: NodeJS.ProcessEnv;
let history: History;
const folder = tempFolder('lineage-http-');
const dataDirectory = path.join(folder.dir, 'data');
beforeAll(async () => {
  const pipelines = path.join(folder.dir, 'pipelines');
  mkdirSync(pipelines);
  env = {
    INGEST_CONFIG: folder.write(
      'cli.yaml',
      stringify({ dataDirectory, pipelinesDirectory: pipelines }),
    ),
  };
  const opened = openHistory(
    {
      environment: 'development',
      dataDirectory,
      history: { ...loadConfig({ env: { INGEST_ENV: 'development' } }).history, flushMs: 10 },
    },
    createLogger({ level: 'silent' }),
    new Registry(),
  );
  if (!opened) throw new Error('the history is on by default');
  history = opened;
  t = await createTestApp({
    yaml: profile,
    history: { writer: history.writer, store: history.store },
  });
});
afterAll(async () => {
  await t.close();
  await history.close();
});

describe('lineage of HTTP batches', () => {
  it('finds each record of a v2 batch by its number: the message id and index of the 202 body, the endpoint and correlation id', async () => {
    const response = await t.post('sales-orders', [
      salesOrder(number('A')),
      salesOrder(number('B')),
    ]);
    expect(response.status).toBe(202);
    const body = await answer(response);
    const work = await answer(await t.post('work-orders', [workOrder(number('W'))]));
    await history.writer.flush();

    const [b, w, readable] = await Promise.all([
      lineage([number('B'), '--json'], env),
      lineage([number('W'), '--json', '--kind', 'work-orders', '--business', 'ACME'], env),
      lineage([number('A')], env),
    ]);
    expect(b.code, b.stderr).toBe(0);
    // From the history, which every batch ends in (another process: this is not serve's).
    expect(jsonLines(b.stdout)).toEqual([
      {
        source: 'history',
        reference: number('B'),
        messageId: body.messageIds[1],
        index: 1,
        kind: 'sales-orders',
        businessId: 'ACME',
        outcome: 'accepted',
        endpoint: '/api/v2/sales-orders',
        correlationId: body.correlationId,
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    expect(w.code, w.stderr).toBe(0);
    expect(jsonLines(w.stdout)).toEqual([
      expect.objectContaining({
        reference: number('W'),
        kind: 'work-orders',
        messageId: work.messageIds[0],
        index: 0,
        endpoint: '/api/v2/work-orders',
      }),
    ]);
    expect(readable.code).toBe(0);
    expect(readable.stdout).toContain(number('A'));
    expect(readable.stdout).toContain('/api/v2/sales-orders');
    expect(readable.stdout).toContain(body.correlationId);
    expect(readable.stdout).toContain(body.messageIds[0]);
  });

  it('finds each record of a v1 CSV batch with the CSV line it starts on', async () => {
    const csv = [
      'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice',
      `ACME,${number('C1')},2026-02-03,1,SKU-1,2,EA,9.99`,
      `ACME,${number('C1')},2026-02-03,2,SKU-2,1,EA,4.50`,
      `ACME,${number('C2')},2026-02-04,1,SKU-9,5,BOX,12`,
    ].join('\r\n');
    const response = await t.post('/api/v1/sales-orders', undefined, {
      raw: csv,
      headers: { 'content-type': 'text/csv' },
    });
    expect(response.status).toBe(202);
    const body = await answer(response);
    await history.writer.flush();

    const found = await lineage([number('C2'), '--json'], env);
    expect(found.code, found.stderr).toBe(0);
    expect(jsonLines(found.stdout)).toEqual([
      expect.objectContaining({
        reference: number('C2'),
        businessId: 'ACME',
        messageId: body.messageIds[1],
        index: 1,
        line: 4,
        endpoint: '/api/v1/sales-orders',
        correlationId: body.correlationId,
      }),
    ]);
  });

  it('leaves no lineage for a rejected batch or one the broker did not confirm; an unknown number exits 1', async () => {
    const rejected = await t.post('sales-orders', [
      salesOrder(number('R1')),
      { ...salesOrder(number('R2')), dates: 'never' },
    ]);
    expect(rejected.status).toBe(400);
    // The same history: a batch the broker did not confirm ends in it without records.
    const unroutable = await createTestApp({
      bindingKeys: ['nothing.reaches.this'],
      history: { writer: history.writer, store: history.store },
    });
    let correlationId: string | null;
    try {
      const failed = await unroutable.post('sales-orders', [salesOrder(number('F1'))]);
      expect(failed.status).toBe(503);
      correlationId = failed.headers.get('x-correlation-id');
    } finally {
      await unroutable.close();
    }
    await history.writer.flush();
    const outcomes = await history.store.batches({ businessId: 'ACME' }, correlationId ?? '');
    expect(outcomes.map((batch) => [batch.outcome, batch.recordCount])).toEqual([
      ['unavailable', 0],
    ]);
    const [r1, r2, f1, unknown] = await Promise.all([
      lineage([number('R1')], env),
      lineage([number('R2')], env),
      lineage([number('F1')], env),
      lineage(['NO-SUCH-ORDER', '--json'], env),
    ]);
    for (const result of [r1, r2, f1, unknown]) {
      expect(result.code, result.stdout + result.stderr).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^warehouse-ingest: no lineage of "[^"]+"\n$/);
    }
  });

  it('refuses bad usage with one line and exit 2', async () => {
    const results = await Promise.all([
      lineage([], env),
      lineage(['X', '--kind', 'orders'], env),
      lineage(['X', '--since', 'yesterday'], env),
      lineage(['X', '--pipeline', 'nope'], env),
      lineage(['X', '--since', '2026-02-30'], env),
    ]);
    for (const { code, stdout, stderr } of results) {
      expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
      expect(stderr).toMatch(/^warehouse-ingest: [^\n]+; see "warehouse-ingest help lineage"\n$/);
    }
    // An impossible day is named, not read as another (new Date takes 2026-02-30 as March 2).
    expect(results[4]!.stderr).toContain('--since must be a real date (2026-11-22)');
    expect(results[4]!.stderr).toContain('got "2026-02-30"');
  });
});

describe('the HTTP lineage journal of earlier versions', () => {
  it('is searched read-only, after the history, until its day files age out (lineage.retentionDays)', async () => {
    const journal = path.join(dataDirectory, 'lineage');
    mkdirSync(journal, { recursive: true });
    const day = (daysAgo: number) =>
      new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    const entry = (reference: string, daysAgo: number) =>
      `${JSON.stringify({ reference, messageId: `m-${reference}`, index: 0, kind: 'sales-orders', businessId: 'ACME', endpoint: '/api/v2/sales-orders', correlationId: `c-${reference}`, at: `${day(daysAgo)}T10:00:00.000Z` })}\n`;
    writeFileSync(path.join(journal, `lineage-${day(1)}.ndjson`), entry(number('OLD-1'), 1));
    // Past the default retention (30 days): no longer read.
    writeFileSync(path.join(journal, `lineage-${day(40)}.ndjson`), entry(number('OLD-40'), 40));
    const [recent, aged] = await Promise.all([
      lineage([number('OLD-1'), '--json'], env),
      lineage([number('OLD-40'), '--json'], env),
    ]);
    expect(recent.code, recent.stderr).toBe(0);
    expect(jsonLines(recent.stdout)).toEqual([
      expect.objectContaining({
        source: 'http',
        reference: number('OLD-1'),
        messageId: `m-${number('OLD-1')}`,
      }),
    ]);
    expect(aged.code, aged.stdout + aged.stderr).toBe(1);
  });
});
