import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from '../../src/cli/status.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { checkDrop, settleFolders } from '../../src/drops/layout.js';
import { probeDrops } from '../../src/drops/probe.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createS3Drop } from '../../src/stores/s3/index.js';
import { createSftpDrop } from '../../src/stores/sftp/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { DropMisconfigured } from '../../src/operator-errors.js';
import { localFixture } from '../support/local-fixture.js';
import { startS3rver, type S3rver } from '../support/s3rver.js';
import { sftpOptionsFor } from '../support/sftp-fixture.js';
import { startSshd, type TestSshd } from '../support/sshd.js';
import { tempFolder } from '../support/temp.js';

/**
 * A drop set up wrong is said to be so — by `status`, `/readyz` (`probeDrops`), and so by `lint`
 * and `run --once` — on every store where it can happen: a drop folder that does not exist is not
 * an empty drop, and a regular file named like a settle folder (`processed`, `failed`) would make
 * every settle fail with ENOTDIR.
 */
const pipeline = pipelineSchema.parse({
  name: 'layout-drop',
  businessId: 'DEMO',
  kind: 'sales-orders',
  format: 'v1-csv',
  source: { type: 'local', path: '/unused' },
});
const folders = settleFolders(pipeline);

async function misconfigured(store: DropStore): Promise<string | undefined> {
  const error = await checkDrop(store, folders).catch((e: unknown) => e);
  if (error === undefined) return undefined;
  expect(error).toBeInstanceOf(DropMisconfigured);
  return (error as DropMisconfigured).code;
}

async function reported(store: DropStore) {
  const [probe] = await probeDrops([{ pipeline: 'layout', store, settleFolders: folders }]);
  const status = await statusOf({ pipeline, store } as Parameters<typeof statusOf>[0], 10);
  return { reachable: probe!.reachable, problem: probe!.problem, statusError: status.error };
}

describe('drop layout: local', () => {
  const temp = tempFolder('layout-');
  it('a missing drop folder, and a regular file where processed/ must be', async () => {
    const missing = createLocalDrop({ path: path.join(temp.dir, 'no-such-drop') });
    expect(await misconfigured(missing)).toBe('drop-folder-missing');
    expect(await reported(missing)).toEqual({
      reachable: false,
      problem: 'drop-folder-missing',
      statusError: `The drop folder ${path.join(temp.dir, 'no-such-drop')} does not exist`,
    });
    const f = await localFixture('layout-blocked-')();
    expect(await misconfigured(f.store)).toBeUndefined();
    await f.put('processed', 'meant as a folder');
    expect(await misconfigured(f.store)).toBe('settle-folder-is-a-file');
    expect(await reported(f.store)).toMatchObject({
      reachable: false,
      problem: 'settle-folder-is-a-file',
      statusError: expect.stringContaining('"processed" in the drop is a regular file'),
    });
  });
});

describe('drop layout: sftp', () => {
  let sshd: TestSshd;
  const stores: DropStore[] = [];
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await sshd.stop();
  });
  const store = (drop: string) => {
    const made = createSftpDrop(sftpOptionsFor(sshd, { path: drop }));
    stores.push(made);
    return made;
  };

  it('a missing drop folder, and a regular file where failed/ must be', async () => {
    const missing = store('no-such-drop');
    expect(await misconfigured(missing)).toBe('drop-folder-missing');
    expect(await reported(missing)).toMatchObject({
      reachable: false,
      problem: 'drop-folder-missing',
      statusError: expect.stringContaining('no-such-drop does not exist'),
    });
    const blocked = store('blocked');
    await blocked.write('orders.csv', 'a file in the drop');
    expect(await misconfigured(blocked)).toBeUndefined();
    await blocked.write('failed', 'meant as a folder');
    expect(await misconfigured(blocked)).toBe('settle-folder-is-a-file');
    expect((await reported(blocked)).problem).toBe('settle-folder-is-a-file');
  });
});

describe('drop layout: s3', () => {
  let s3: S3rver;
  beforeAll(async () => {
    s3 = await startS3rver();
  });
  afterAll(() => s3.stop());

  it('a bucket that does not exist is said to be missing; a key named processed blocks nothing in S3', async () => {
    const options = {
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    };
    const missing = createS3Drop({ ...options, bucket: 'no-such-bucket' });
    expect(await misconfigured(missing)).toBe('drop-folder-missing');
    expect(await reported(missing)).toEqual({
      reachable: false,
      problem: 'drop-folder-missing',
      statusError: 'The bucket no-such-bucket does not exist',
    });
    await missing.close();
    const drop = createS3Drop({ ...options, bucket: s3.bucket });
    await drop.write('processed', 'a key, not a folder');
    expect(await misconfigured(drop)).toBeUndefined();
    await drop.close();
  });
});
