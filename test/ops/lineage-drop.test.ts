import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Receipt } from '../../src/drops/receipts.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createS3Drop } from '../../src/stores/s3/index.js';
import { demoOrdersCsv, startDropHarness, type DropHarness } from '../support/drop-harness.js';
import { readAll } from '../stores/store-contract.js';
import { startS3rver } from '../support/s3rver.js';
import { tempFolder } from '../support/temp.js';
import { jsonLines, lineage } from './lineage-cli.js';

const PIPELINE = `lineage-drop-${process.pid}`;
const tag = `LD-${process.pid}-${Date.now().toString(36)}`;

const folder = tempFolder('lineage-drop-');
const drop = path.join(folder.dir, 'drop');
let harness: DropHarness;
/** The environment of a `lineage` process that knows this drop as a pipeline (DEMO is development's tenant). */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  mkdirSync(drop);
  harness = await startDropHarness(createLocalDrop({ path: drop }), PIPELINE);
  const pipelines = path.join(folder.dir, 'pipelines');
  mkdirSync(pipelines);
  writeFileSync(
    path.join(pipelines, 'demo.yaml'),
    stringify({
      name: PIPELINE,
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v1-csv',
      source: { type: 'local', path: drop },
      readiness: { strategy: 'rename' },
    }),
  );
  env = {
    INGEST_ENV: 'development',
    INGEST_CONFIG: folder.write(
      'cli.yaml',
      stringify({ dataDirectory: path.join(folder.dir, 'data'), pipelinesDirectory: pipelines }),
    ),
  };
});
afterAll(() => harness.close());

const stateFiles = () => readdirSync(path.join(drop, '.warehouse-ingest', 'state'));

describe('lineage of a dropped CSV file', () => {
  it('finds the file, the CSV line, the message id of the receipt and the receipt; --since skips older inputs', async () => {
    // Three orders of two rows each: order i starts on line 2 + 2i.
    writeFileSync(path.join(drop, 'orders.csv'), demoOrdersCsv(tag, 3));
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 1, rejected: 0 });
    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'processed', 'orders.csv.receipt.json'), 'utf8'),
    ) as Receipt & { response: { messageIds: string[] } };
    expect(stateFiles()).toContain(`${receipt.file.sha256}.lineage`);

    const [json, readable, since, later, other] = await Promise.all([
      lineage([`${tag}-2`, '--json'], env),
      lineage([`${tag}-1`], env),
      lineage(
        [
          `${tag}-1`,
          '--since',
          new Date(Date.now() - 3_600_000).toISOString(),
          '--pipeline',
          PIPELINE,
          '--kind',
          'sales-orders',
          '--business',
          'DEMO',
        ],
        env,
      ),
      lineage([`${tag}-1`, '--since', new Date(Date.now() + 3_600_000).toISOString()], env),
      lineage([`${tag}-1`, '--kind', 'work-orders'], env),
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(jsonLines(json.stdout)).toEqual([
      {
        source: 'local',
        index: 2,
        line: 6,
        reference: `${tag}-2`,
        messageId: receipt.response.messageIds[2],
        kind: 'sales-orders',
        businessId: 'DEMO',
        pipeline: PIPELINE,
        drop: `local:${drop}`,
        file: 'orders.csv',
        sha256: receipt.file.sha256,
        status: 'receipted',
        processedAt: receipt.processedAt,
        receipt: 'processed/orders.csv.receipt.json',
        location: 'processed/orders.csv',
      },
    ]);
    expect(readable.code, readable.stderr).toBe(0);
    expect(readable.stdout).toBe(
      `${tag}-1 (sales-orders, DEMO): file orders.csv, line 4, record 1, pipeline ${PIPELINE} (local:${drop}/processed/orders.csv) — message ${receipt.response.messageIds[1]}, receipt processed/orders.csv.receipt.json, processed ${receipt.processedAt}\n`,
    );
    expect(since.code, since.stderr).toBe(0);
    expect(since.stdout).toBe(readable.stdout);
    expect([later.code, later.stdout, other.code, other.stdout]).toEqual([1, '', 1, '']);
  });

  it('leaves no lineage for a rejected file', async () => {
    const broken = demoOrdersCsv(`${tag}-bad`, 2).replace(',2,EA,', ',two,EA,');
    writeFileSync(path.join(drop, 'broken.csv'), broken);
    const before = stateFiles().filter((name) => name.endsWith('.lineage')).length;
    expect(await harness.runner.runOnce()).toMatchObject({ accepted: 0, rejected: 1 });
    expect(existsSync(path.join(drop, 'failed', 'broken.csv.receipt.json'))).toBe(true);
    expect(stateFiles().filter((name) => name.endsWith('.lineage'))).toHaveLength(before);
    const { code, stdout } = await lineage([`${tag}-bad-1`], env);
    expect([code, stdout]).toEqual([1, '']);
  });
});

describe('lineage of a file dropped in S3', () => {
  it('is kept in the bucket beside the ids and found there', async () => {
    const s3 = await startS3rver();
    const credentials = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey };
    const store = createS3Drop({
      bucket: s3.bucket,
      prefix: 'in/',
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials,
    });
    const name = `${PIPELINE}-s3`;
    const s3harness = await startDropHarness(store, name);
    try {
      const body = demoOrdersCsv(`${tag}-S3`, 2);
      await s3.client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: 'in/orders.csv',
          Body: body,
          ContentLength: Buffer.byteLength(body),
        }),
      );
      // Looked at until accepted: what is checked here is the lineage, and on a loaded machine a
      // first try may be put back for a transient reason (it then counts as retried, not accepted).
      let accepted = 0;
      await expect
        .poll(async () => (accepted += (await s3harness.runner.runOnce()).accepted), {
          timeout: 30_000,
          interval: 200,
        })
        .toBe(1);
      const receipt = JSON.parse(
        (await readAll(await store.read('processed/orders.csv.receipt.json'))).toString('utf8'),
      ) as Receipt & { response: { messageIds: string[] } };

      const pipelines = path.join(folder.dir, 's3-pipelines');
      mkdirSync(pipelines);
      const source = {
        type: 's3',
        bucket: s3.bucket,
        prefix: 'in/',
        region: s3.region,
        endpoint: s3.endpoint,
        forcePathStyle: true,
        accessKeyId: { env: 'TEST_S3_KEY' },
        secretAccessKey: { env: 'TEST_S3_SECRET' },
      };
      writeFileSync(
        path.join(pipelines, 's3.yaml'),
        stringify({ name, businessId: 'DEMO', kind: 'sales-orders', format: 'v1-csv', source }),
      );
      const s3env = {
        INGEST_ENV: 'development',
        INGEST_CONFIG: folder.write(
          's3.yaml',
          stringify({
            dataDirectory: path.join(folder.dir, 'data'),
            pipelinesDirectory: pipelines,
          }),
        ),
        TEST_S3_KEY: s3.accessKeyId,
        TEST_S3_SECRET: s3.secretAccessKey,
      };
      const found = await lineage([`${tag}-S3-1`, '--json'], s3env);
      expect(found.code, found.stderr).toBe(0);
      expect(jsonLines(found.stdout)).toEqual([
        expect.objectContaining({
          source: 's3',
          file: 'orders.csv',
          line: 4,
          index: 1,
          messageId: receipt.response.messageIds[1],
          receipt: 'processed/orders.csv.receipt.json',
          location: 'processed/orders.csv',
        }),
      ]);
    } finally {
      await s3harness.close();
      await store.close();
      await s3.stop();
    }
  });
});
