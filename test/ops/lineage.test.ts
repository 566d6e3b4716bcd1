import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { lineageDirectory, loadConfig } from '../../src/config.js';
import { createLineageJournal, journalFile } from '../../src/lineage/journal.js';
import { createLogger } from '../../src/log.js';
import { validRecords } from '../records/fixtures.js';
import { answer, createTestApp, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';
import { journalHolds, jsonLines, lineage } from './lineage-cli.js';

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

const today = () => new Date().toISOString().slice(0, 10);

let t: TestApp;
/** The environment of a `lineage` process reading this app's journal (and no drop). */
let env: NodeJS.ProcessEnv;
let journal: string;
const folder = tempFolder('lineage-http-');
beforeAll(async () => {
  t = await createTestApp({ yaml: profile });
  const pipelines = path.join(folder.dir, 'pipelines');
  mkdirSync(pipelines);
  env = {
    INGEST_CONFIG: folder.write(
      'cli.yaml',
      stringify({ dataDirectory: t.config.dataDirectory, pipelinesDirectory: pipelines }),
    ),
  };
  journal = path.join(lineageDirectory(t.config), journalFile(today()));
});
afterAll(() => t.close());

describe('lineage of HTTP batches', () => {
  it('finds each record of a v2 batch by its number: the message id and index of the 202 body, the endpoint and correlation id', async () => {
    const response = await t.post('sales-orders', [
      salesOrder(number('A')),
      salesOrder(number('B')),
    ]);
    expect(response.status).toBe(202);
    const body = await answer(response);
    const work = await answer(await t.post('work-orders', [workOrder(number('W'))]));
    await journalHolds(journal, work.messageIds[0]!);

    const [b, w, readable] = await Promise.all([
      lineage([number('B'), '--json'], env),
      lineage([number('W'), '--json', '--kind', 'work-orders', '--business', 'ACME'], env),
      lineage([number('A')], env),
    ]);
    expect(b.code, b.stderr).toBe(0);
    expect(jsonLines(b.stdout)).toEqual([
      {
        source: 'http',
        reference: number('B'),
        messageId: body.messageIds[1],
        index: 1,
        kind: 'sales-orders',
        businessId: 'ACME',
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
    expect(readable.stdout).toBe(
      `${number('A')} (sales-orders, ACME): POST /api/v2/sales-orders at ${jsonLines(b.stdout)[0]!.at}, record 0, correlation ${body.correlationId} — message ${body.messageIds[0]}\n`,
    );
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
    await journalHolds(journal, body.messageIds[1]!);

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
    const unroutable = await createTestApp({ bindingKeys: ['nothing.reaches.this'] });
    try {
      const failed = await unroutable.post('sales-orders', [salesOrder(number('F1'))]);
      expect(failed.status).toBe(503);
      // Written after them: once it is in the journal, they would be too.
      const later = await answer(await t.post('sales-orders', [salesOrder(number('L'))]));
      await journalHolds(journal, later.messageIds[0]!);
      const unused = lineageDirectory(unroutable.config);
      expect(existsSync(unused) ? readdirSync(unused) : []).toEqual([]);
    } finally {
      await unroutable.close();
    }
    const unroutableEnv = {
      INGEST_CONFIG: folder.write(
        'unroutable.yaml',
        stringify({
          dataDirectory: unroutable.config.dataDirectory,
          pipelinesDirectory: path.join(folder.dir, 'pipelines'),
        }),
      ),
    };

    const [r1, r2, f1, unknown] = await Promise.all([
      lineage([number('R1')], env),
      lineage([number('R2')], env),
      lineage([number('F1')], unroutableEnv),
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

  it('keeps a confirmed batch accepted when the journal cannot be written, and counts the lost lineage', async () => {
    const blocked = folder.write('not-a-folder', '');
    const broken = await createTestApp({
      yaml: `lineage:\n  directory: ${blocked}/lineage\n  retentionDays: 7\n`,
    });
    try {
      const response = await broken.post('sales-orders', [
        salesOrder(number('X1')),
        salesOrder(number('X2')),
      ]);
      expect(response.status).toBe(202);
      await expect
        .poll(
          async () =>
            (await (await broken.admin.request('/metrics')).text()).match(
              /^warehouse_ingest_lineage_lost_records_total (\d+)$/m,
            )?.[1],
        )
        .toBe('2');
      expect(
        broken.logs.lines.some(
          (line) =>
            line.msg === 'lineage journal write failed: these records have no HTTP lineage' &&
            line.lines === 2,
        ),
      ).toBe(true);
    } finally {
      await broken.close();
    }
  });
});

describe('the lineage journal', () => {
  it('writes one file per UTC day and deletes the days beyond retention', async () => {
    const dir = tempFolder('lineage-journal-').dir;
    const day = (daysAgo: number) =>
      new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    for (const name of [journalFile(day(3)), journalFile(day(2)), journalFile(day(1)), 'notes.txt'])
      writeFileSync(path.join(dir, name), '');
    const journal = createLineageJournal(
      { directory: dir, retentionDays: 2 },
      createLogger({ level: 'silent' }),
    );
    const confirmed = [
      { first: 0, messageIds: ['m-0', 'm-1'], references: ['R-0', 'R\t1'], lines: [2, 4] },
    ];
    journal.record(
      {
        businessId: 'ACME',
        kind: 'sales-orders',
        endpoint: '/api/v1/sales-orders',
        correlationId: 'c-1',
        at: new Date(),
      },
      confirmed,
    );
    await journal.flush();
    expect(readdirSync(dir).sort()).toEqual(
      [journalFile(day(1)), journalFile(day(0)), 'notes.txt'].sort(),
    );
    const written = jsonLines(readFileSync(path.join(dir, journalFile(day(0))), 'utf8'));
    expect(written).toEqual([
      {
        reference: 'R-0',
        messageId: 'm-0',
        index: 0,
        line: 2,
        kind: 'sales-orders',
        businessId: 'ACME',
        endpoint: '/api/v1/sales-orders',
        correlationId: 'c-1',
        at: expect.any(String),
      },
      expect.objectContaining({ reference: 'R\t1', messageId: 'm-1', index: 1, line: 4 }),
    ]);
  });

  it('keeps the day file open between writes, and opens it again when it is removed', async () => {
    const dir = tempFolder('lineage-journal-').dir;
    const journal = createLineageJournal(
      { directory: path.join(dir, 'made-on-first-write'), retentionDays: 2, recheckMs: 0 },
      createLogger({ level: 'silent' }),
    );
    const batch = (n: number) =>
      journal.record(
        {
          businessId: 'ACME',
          kind: 'sales-orders',
          endpoint: '/api/v2/sales-orders',
          correlationId: `c-${n}`,
          at: new Date(),
        },
        [{ first: 0, messageIds: [`m-${n}`], references: [`R-${n}`] }],
      );
    const file = path.join(
      dir,
      'made-on-first-write',
      journalFile(new Date().toISOString().slice(0, 10)),
    );
    batch(1);
    await journal.flush();
    batch(2);
    await journal.flush();
    expect(jsonLines(readFileSync(file, 'utf8')).map((l) => l.messageId)).toEqual(['m-1', 'm-2']);
    unlinkSync(file); // an operator's clean-up while the service runs
    batch(3);
    await journal.close();
    expect(jsonLines(readFileSync(file, 'utf8')).map((l) => l.messageId)).toEqual(['m-3']);
  });
});
