import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { freshDatabase } from '../support/postgres.js';
import { startS3rver } from '../support/s3rver.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';

/** `warehouse-ingest run <file> --once` as a separate process, as an operator or cron would run it. */
const runOnce = (pipelineFile: string, env: NodeJS.ProcessEnv) =>
  runCli(['run', pipelineFile, '--once'], { env });

/** DEMO's orders: the development profile completes them. */
const demoCsv = (tag: string) => ordersCsv(tag).replaceAll('ACME,', 'DEMO,');

let topology: TestTopology;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});
afterAll(() => topology.cleanup());

function setUp(files: number) {
  const temp = tempFolder('run-cli-');
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  for (let i = 0; i < files; i++)
    writeFileSync(path.join(drop, `orders-${i}.csv`), demoCsv(`RUN${i}-${Date.now()}`));
  const pipeline = temp.write(
    'demo.yaml',
    `name: demo-drop\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: ${drop} }\nreadiness: { strategy: rename }\n`,
  );
  const config = temp.write(
    'config.yaml',
    `dataDirectory: ${temp.dir}/data\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\n`,
  );
  return { drop, pipeline, env: { INGEST_CONFIG: config, AMQP_URL } };
}

describe('warehouse-ingest run --once', () => {
  it('processes every ready file, prints a summary line, exits 0', async () => {
    const { drop, pipeline, env } = setUp(2);
    writeFileSync(path.join(drop, 'broken.csv'), 'not,a,legacy,file\n1,2,3,4\n');
    const { code, stdout } = await runOnce(pipeline, env);
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({ accepted: 2, rejected: 1, retried: 0 });
    expect(readdirSync(path.join(drop, 'processed')).sort()).toEqual([
      'orders-0.csv',
      'orders-0.csv.receipt.json',
      'orders-1.csv',
      'orders-1.csv.receipt.json',
    ]);
    expect(existsSync(path.join(drop, 'failed', 'broken.csv.receipt.json'))).toBe(true);
    expect(await topology.count()).toBe(4);
    await topology.messages();
  });

  it("writes its files' outcomes to the history, as serve does", async () => {
    const database = await freshDatabase('runonce');
    const store = createPostgresHistory({ url: database.url });
    try {
      const { drop, pipeline, env } = setUp(1);
      writeFileSync(path.join(drop, 'broken.csv'), 'not,a,legacy,file\n1,2,3,4\n');
      const { code } = await runOnce(pipeline, {
        ...env,
        INGEST_HISTORY__ENABLED: 'true',
        HISTORY_URL: database.url,
      });
      expect(code).toBe(0);
      const { items } = await store.listBatches(
        { businessId: 'DEMO' },
        { source: 'demo-drop' },
        { limit: 10 },
      );
      const byFile = (b: (typeof items)[number]) =>
        'fileName' in b.source ? b.source.fileName : '';
      expect(
        [...items]
          .sort((a, b) => byFile(a).localeCompare(byFile(b)))
          .map((b) => [b.source, b.outcome, b.recordCount]),
      ).toEqual([
        [{ pipeline: 'demo-drop', fileName: 'broken.csv' }, 'rejected', 0],
        [{ pipeline: 'demo-drop', fileName: 'orders-0.csv' }, 'accepted', 2],
      ]);
      // Its two records, taken off the shared queue before the next test counts it.
      await expect.poll(() => topology.count()).toBe(2);
      await topology.messages();
    } finally {
      await store.close();
      await database.drop();
    }
  });

  it('exits 1 with one clear line when the drop cannot be read', async () => {
    const { pipeline, env } = setUp(0);
    const bad = pipeline.replace('demo.yaml', 'bad.yaml');
    writeFileSync(bad, readFileSync(pipeline, 'utf8').replace(/path: [^ }]+/, `path: ${pipeline}`)); // a file, not a folder
    const { code, stderr } = await runOnce(bad, env);
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^warehouse-ingest: /);
  });

  it('exits 1 saying so when the drop folder does not exist (never "nothing to do")', async () => {
    const { drop, pipeline, env } = setUp(0);
    const missing = pipeline.replace('demo.yaml', 'missing.yaml');
    writeFileSync(missing, readFileSync(pipeline, 'utf8').replace(drop, `${drop}-gone`));
    const { code, stdout, stderr } = await runOnce(missing, env);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toBe(`warehouse-ingest: The drop folder ${drop}-gone does not exist\n`);
  });

  it('exits 1 naming the file that sits where processed/ must be, and takes no file it could not settle', async () => {
    const { drop, pipeline, env } = setUp(1);
    writeFileSync(path.join(drop, 'processed'), 'an operator meant this as a folder');
    const { code, stdout, stderr } = await runOnce(pipeline, env);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('"processed" in the drop is a regular file');
    expect(readdirSync(drop).sort()).toEqual(['orders-0.csv', 'processed']);
  });

  it('lets two worker processes share one drop: every file once, one receipt each, no doubled message', async () => {
    const files = 12;
    const { drop, pipeline, env } = setUp(files);
    const [a, b] = await Promise.all([runOnce(pipeline, env), runOnce(pipeline, env)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const [sa, sb] = [JSON.parse(a.stdout.trim()), JSON.parse(b.stdout.trim())];
    expect(sa.accepted + sb.accepted).toBe(files);
    const processed = readdirSync(path.join(drop, 'processed'));
    expect(processed.filter((f) => f.endsWith('.receipt.json'))).toHaveLength(files);
    const messages = await topology.messages();
    expect(messages).toHaveLength(files * 2);
    expect(new Set(messages.map((m) => m.properties.messageId)).size).toBe(files * 2);
  });

  it('lets two worker processes share one S3 drop through the broker lease: every file once, one receipt each', async () => {
    const s3 = await startS3rver();
    try {
      const files = 8;
      for (let i = 0; i < files; i++) {
        const body = demoCsv(`S3RUN${i}-${Date.now()}`);
        await s3.client.send(
          new PutObjectCommand({
            Bucket: s3.bucket,
            Key: `in/orders-${i}.csv`,
            Body: body,
            ContentLength: Buffer.byteLength(body),
          }),
        );
      }
      const { pipeline, env } = setUp(0);
      writeFileSync(
        pipeline,
        [
          `name: demo-s3-${process.pid}`,
          'businessId: DEMO',
          'kind: sales-orders',
          'format: v1-csv',
          `source: { type: s3, bucket: ${s3.bucket}, prefix: in/, region: ${s3.region}, endpoint: "${s3.endpoint}", forcePathStyle: true, accessKeyId: { env: TEST_S3_KEY }, secretAccessKey: { env: TEST_S3_SECRET } }`,
          'readiness: { strategy: rename }',
          '',
        ].join('\n'),
      );
      const s3env = { ...env, TEST_S3_KEY: s3.accessKeyId, TEST_S3_SECRET: s3.secretAccessKey };
      const [a, b] = await Promise.all([runOnce(pipeline, s3env), runOnce(pipeline, s3env)]);
      expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
      const [sa, sb] = [JSON.parse(a.stdout.trim()), JSON.parse(b.stdout.trim())];
      expect(sa.accepted + sb.accepted).toBe(files);
      expect(sa.duplicates + sb.duplicates).toBe(0);
      const listed = await s3.client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'in/processed/' }),
      );
      expect((listed.Contents ?? []).filter((o) => o.Key!.endsWith('.receipt.json'))).toHaveLength(
        files,
      );
      const messages = await topology.messages();
      expect(messages).toHaveLength(files * 2);
      expect(new Set(messages.map((m) => m.properties.messageId)).size).toBe(files * 2);
    } finally {
      await s3.stop();
    }
  });
});
