import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DropUnavailable } from '../../src/errors.js';
import { createS3Drop, S3DropError, type S3DropOptions } from '../../src/stores/s3/index.js';
import { DropAccessDenied } from '../../src/operator-errors.js';
import { startS3rver, type S3rver } from '../support/s3rver.js';
import { describeDropStore, readAll } from './store-contract.js';
import { s3Fixture } from '../support/s3-fixture.js';

const put = (s3: S3rver, key: string, content: string | Buffer) =>
  s3.client.send(
    new PutObjectCommand({
      Bucket: s3.bucket,
      Key: key,
      Body: content,
      ContentLength: Buffer.byteLength(content),
    }),
  );

async function exists(client: S3Client, bucket: string, key: string): Promise<boolean> {
  try {
    await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'NotFound') return false;
    throw error;
  }
}

const dropFor = (s3: S3rver, extra: Partial<S3DropOptions> = {}) =>
  createS3Drop({
    bucket: s3.bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    ...extra,
  });

describeDropStore('s3 (s3rver)', s3Fixture);

describe('s3 drop', () => {
  let s3: S3rver;
  beforeAll(async () => {
    s3 = await startS3rver();
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('lists more than one page (1000 keys) of files', async () => {
    const names = Array.from(
      { length: 1100 },
      (_, i) => `many/f-${String(i).padStart(4, '0')}.csv`,
    );
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => put(s3, name, 'x')));
    }
    await put(s3, 'many/deeper/not-me.csv', 'x');
    const store = dropFor(s3);
    const entries = await store.list('many');
    expect(entries.map((e) => e.name)).toEqual(names);
    expect(entries.every((e) => e.size === 1)).toBe(true);
    await store.close();
  });

  it('keeps names relative to a prefix, and skips folder placeholder keys', async () => {
    await put(s3, 'drops/acme/in.csv', 'a,b');
    await put(s3, 'drops/acme/', ''); // what consoles create for "New folder"
    await put(s3, 'drops/acme/processed/', '');
    await put(s3, 'drops/acme/processed/old.csv', 'old');
    await put(s3, 'drops/acme-2/x.csv', 'not ours');
    await put(s3, 'drops/other/y.csv', 'not ours');
    const store = dropFor(s3, { prefix: 'drops/acme' }); // trailing `/` added
    expect(store.where).toBe('s3://drops/drops/acme/');

    expect(await store.list()).toEqual([expect.objectContaining({ name: 'in.csv', size: 3 })]);
    expect((await store.list('processed')).map((e) => e.name)).toEqual(['processed/old.csv']);
    expect(await store.stat('in.csv')).toMatchObject({ name: 'in.csv', size: 3 });

    expect(await store.rename('in.csv', 'processed/in.csv')).toBe(true);
    expect(await exists(s3.client, s3.bucket, 'drops/acme/processed/in.csv')).toBe(true);
    expect(await exists(s3.client, s3.bucket, 'drops/acme/in.csv')).toBe(false);

    await store.write('receipts/in.receipt.json', '{"ok":true}');
    const written = await s3.client.send(
      new GetObjectCommand({ Bucket: s3.bucket, Key: 'drops/acme/receipts/in.receipt.json' }),
    );
    expect(written.ContentType).toBe('application/json');
    expect(await written.Body!.transformToString()).toBe('{"ok":true}');
    await store.write('receipts/empty.txt', '');
    expect(await store.stat('receipts/empty.txt')).toMatchObject({ size: 0 });
    await store.close();
  });

  it.each([['Bestellung März 1.csv'], ['注文 (2) ü%20.csv'], ['a  b/c d.csv']])(
    'copies the key %j correctly on rename',
    async (name) => {
      const content = Buffer.from(`content of ${name}`);
      await put(s3, `copy/${name}`, content);
      const store = dropFor(s3, { prefix: 'copy/' });
      expect(await store.rename(name, `done/${name}`)).toBe(true);
      const moved = await s3.client.send(
        new GetObjectCommand({ Bucket: s3.bucket, Key: `copy/done/${name}` }),
      );
      expect(Buffer.from(await moved.Body!.transformToByteArray())).toEqual(content);
      expect(await exists(s3.client, s3.bucket, `copy/${name}`)).toBe(false);
      await store.close();
    },
  );

  it('fails loudly, not as a lost race, when the server misreads an existing copy source', async () => {
    // s3rver decodes x-amz-copy-source with decodeURI, which keeps %3A etc.; real S3 decodes fully.
    await put(s3, 'misread/10:30.csv', 'x');
    const store = dropFor(s3);
    await expect(store.rename('misread/10:30.csv', 'misread/done/10:30.csv')).rejects.toThrow(
      /decodes x-amz-copy-source differently/,
    );
    expect(await exists(s3.client, s3.bucket, 'misread/10:30.csv')).toBe(true);
    await store.close();
  });

  it('names bucket and key in errors, never the credentials', async () => {
    // s3rver does not verify SigV4 signatures, only that it knows the access key: an unknown one gives a 403.
    const credentials = { accessKeyId: 'AKIAUNKNOWN7Q', secretAccessKey: 'wrong-secret-Zq7x' };
    const store = dropFor(s3, { credentials });
    const error: unknown = await store.read('in/x.csv').catch((e: unknown) => e);
    // A 403 is a refusal, not an outage: DropAccessDenied, with the S3DropError as its cause.
    expect(error).toBeInstanceOf(DropAccessDenied);
    expect((error as Error).cause).toBeInstanceOf(S3DropError);
    const { message, stack } = error as Error;
    expect(message).toContain('s3://drops/in/x.csv');
    expect(message).toContain('403');
    expect(`${message}\n${stack}`).not.toContain(credentials.accessKeyId);
    expect(`${message}\n${stack}`).not.toContain(credentials.secretAccessKey);
    await store.close();
  });
});

describe('s3 drop when the server fails', () => {
  let s3: S3rver;
  beforeAll(async () => {
    s3 = await startS3rver();
    await put(s3, 'f/a.csv', 'A');
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('fails within the timeout when the server stops answering, and recovers when it answers again', async () => {
    const store = dropFor(s3, { timeoutMs: 300, maxAttempts: 2 });
    expect(await store.stat('f/a.csv')).toMatchObject({ size: 1 }); // a pooled keep-alive connection
    s3.freeze();
    try {
      const started = performance.now();
      await expect(store.list('f')).rejects.toThrow(/s3:\/\/drops\/f\/.*TimeoutError/);
      expect(performance.now() - started).toBeLessThan(3000);
    } finally {
      s3.thaw();
    }
    await vi.waitFor(
      async () => expect((await store.list('f')).map((e) => e.name)).toEqual(['f/a.csv']),
      { timeout: 5000, interval: 100 },
    );
    await store.close();
  });

  it('fails fast while the server is down, and works again after a restart', async () => {
    const store = dropFor(s3, { timeoutMs: 300, maxAttempts: 2 });
    expect(await store.stat('f/a.csv')).toMatchObject({ size: 1 });
    await s3.kill();
    const started = performance.now();
    const down: unknown = await store.stat('f/a.csv').catch((e: unknown) => e);
    expect(down).toBeInstanceOf(DropUnavailable); // an outage, mapped once at the store's boundary
    expect((down as Error).cause).toBeInstanceOf(S3DropError);
    await expect(store.read('f/a.csv')).rejects.toThrow(/s3:\/\/drops\/f\/a\.csv/);
    expect(performance.now() - started).toBeLessThan(3000);

    await s3.restart();
    await vi.waitFor(async () => expect(await store.stat('f/a.csv')).toMatchObject({ size: 1 }), {
      timeout: 5000,
      interval: 100,
    });
    expect((await readAll(await store.read('f/a.csv'))).toString()).toBe('A');
    await store.close();
  });
});
