import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createS3Drop } from '../../src/stores/s3/index.js';
import { createSftpDrop } from '../../src/stores/sftp/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { warehouseEvent, type WarehouseEvent } from '../../src/events/event.js';
import {
  OUTBOUND_STAGING,
  outboundFileContent,
  outboundFileName,
  STALE_STAGING_MS,
  sweepOutboundStaging,
  writeOutboundFile,
  type OutboundFilesSpec,
} from '../../src/events/destinations/file/format.js';
import { fileDestination } from '../../src/events/destinations/file/index.js';
import { sftpOptionsFor } from '../support/sftp-fixture.js';
import { startS3rver } from '../support/s3rver.js';
import { startSshd } from '../support/sshd.js';
import { tempFolder } from '../support/temp.js';

/** A drop under test, with its backend read and written directly (not through the store). */
interface OutboundFixture {
  readonly store: DropStore;
  /** The raw bytes of a file as the backend holds them, or undefined. */
  get(name: string): Promise<Buffer | undefined>;
  put(name: string, content: string): Promise<void>;
  close(): Promise<void>;
}

const temp = tempFolder('outbound-files-');

function folderFixture(root: string, store: DropStore): OutboundFixture {
  return {
    store,
    async get(name) {
      try {
        return readFileSync(path.join(root, name));
      } catch {
        return undefined;
      }
    },
    async put(name, content) {
      mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
      writeFileSync(path.join(root, name), content);
    },
    close: () => store.close(),
  };
}

const FIXTURES: Array<[string, () => Promise<OutboundFixture>]> = [
  [
    'local',
    async () => {
      const root = path.join(temp.dir, 'local');
      return folderFixture(root, createLocalDrop({ path: root }));
    },
  ],
  [
    'sftp (OpenSSH)',
    async () => {
      const sshd = await startSshd();
      const fixture = folderFixture(
        path.join(sshd.dataDir, 'drop'),
        createSftpDrop(sftpOptionsFor(sshd)),
      );
      return {
        ...fixture,
        close: async () => {
          await fixture.close();
          await sshd.stop();
        },
      };
    },
  ],
  [
    's3 (s3rver)',
    async () => {
      const s3 = await startS3rver();
      const store = createS3Drop({
        bucket: s3.bucket,
        region: s3.region,
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      });
      return {
        store,
        async get(name) {
          try {
            const object = await s3.client.send(
              new GetObjectCommand({ Bucket: s3.bucket, Key: name }),
            );
            return Buffer.from(await object.Body!.transformToByteArray());
          } catch (error) {
            if ((error as Error).name === 'NoSuchKey') return undefined;
            throw error;
          }
        },
        async put(name, content) {
          await s3.client.send(
            new PutObjectCommand({
              Bucket: s3.bucket,
              Key: name,
              Body: content,
              ContentLength: Buffer.byteLength(content),
            }),
          );
        },
        close: async () => {
          await store.close();
          await s3.stop();
        },
      };
    },
  ],
];

const event = (
  id: string,
  at = '2026-11-23T16:49:01Z',
  data: Record<string, unknown> = {},
): WarehouseEvent =>
  warehouseEvent({
    id,
    type: 'sales-order.shipped',
    businessId: 'ACME',
    occurredAt: new Date(at),
    data: { orderNumber: 'SO-1', note: 'Grüße, "quoted"', ...data },
  });

const JSON_SPEC: OutboundFilesSpec = { path: 'outbound', format: 'json' };
const CSV_SPEC: OutboundFilesSpec = {
  path: 'outbound-csv',
  format: 'csv',
  columns: ['$id', 'orderNumber', 'note'],
};

async function write(store: DropStore, e: WarehouseEvent, spec: OutboundFilesSpec) {
  return writeOutboundFile(store, outboundFileName(e, spec), outboundFileContent(e, spec));
}

describe.each(FIXTURES)('outbound files through the DropStore: %s', (_, makeFixture) => {
  let f: OutboundFixture;
  beforeAll(async () => {
    f = await makeFixture();
  });
  afterAll(() => f?.close());

  it('writes a JSON event file byte for byte under its sortable name, leaving nothing staged', async () => {
    expect(await write(f.store, event('evt-1'), JSON_SPEC)).toBe('written');
    const bytes = await f.get('outbound/20261123T164901Z-sales-order.shipped-evt-1.json');
    expect(bytes?.toString('hex')).toBe(
      Buffer.from(outboundFileContent(event('evt-1'), JSON_SPEC)).toString('hex'),
    );
    expect(JSON.parse(bytes!.toString('utf8'))).toMatchObject({
      id: 'evt-1',
      data: { note: 'Grüße, "quoted"' },
    });
    expect(await f.store.list(`${OUTBOUND_STAGING}/outbound`)).toEqual([]);
  });

  it('writes a CSV event file: the declared header and one row, byte for byte', async () => {
    expect(await write(f.store, event('evt-2'), CSV_SPEC)).toBe('written');
    const bytes = await f.get('outbound-csv/20261123T164901Z-sales-order.shipped-evt-2.csv');
    expect(bytes?.toString('utf8')).toBe(
      '$id,orderNumber,note\r\nevt-2,SO-1,"Grüße, ""quoted"""\r\n',
    );
  });

  it('treats a name already there as delivered and never overwrites it', async () => {
    const name = outboundFileName(event('evt-3'), JSON_SPEC);
    await f.put(name, 'the partner edited this');
    expect(await write(f.store, event('evt-3'), JSON_SPEC)).toBe('existing');
    expect((await f.get(name))?.toString()).toBe('the partner edited this');
  });

  it('writes one file when two duplicates of an event race, both calls succeeding', async () => {
    const results = await Promise.all([
      write(f.store, event('evt-4'), JSON_SPEC),
      write(f.store, event('evt-4'), JSON_SPEC),
    ]);
    expect(results).toContain('written');
    const name = outboundFileName(event('evt-4'), JSON_SPEC);
    expect((await f.get(name))?.toString()).toBe(outboundFileContent(event('evt-4'), JSON_SPEC));
    expect((await f.store.list('outbound')).filter((e) => e.name.includes('evt-4'))).toHaveLength(
      1,
    );
  });

  it('sweeps what killed writers left in the staging folder, once it is old enough', async () => {
    const spec: OutboundFilesSpec = { path: 'swept', format: 'json' };
    const staged = (id: string) => `${OUTBOUND_STAGING}/${outboundFileName(event(id), spec)}`;
    // What a worker killed while staging leaves: the store's temporary files (`<name>.<8 hex>.tmp`),
    // and whole staged files, one whose event was delivered since, one still to be renamed by its redelivery.
    const leftovers = [`${staged('k1')}.0badc0de.tmp`, `${staged('k2')}.12345678.tmp`];
    for (const name of leftovers) await f.put(name, '{"id":');
    // k3: delivered by another worker's try, and left staged by the killed one.
    await f.put(outboundFileName(event('k3'), spec), outboundFileContent(event('k3'), spec));
    await f.put(staged('k3'), outboundFileContent(event('k3'), spec));
    await f.put(staged('k4'), outboundFileContent(event('k4'), spec));
    const now = Date.now();
    if (!f.store.atomicRename) {
      // S3 stages nothing (PUTs appear whole): its sweep touches nothing.
      expect(
        await sweepOutboundStaging(f.store, spec, STALE_STAGING_MS, now + 2 * STALE_STAGING_MS),
      ).toEqual([]);
      return;
    }
    // Young: a write may still be under way.
    expect(await sweepOutboundStaging(f.store, spec, STALE_STAGING_MS, now)).toEqual([]);
    const removed = await sweepOutboundStaging(
      f.store,
      spec,
      STALE_STAGING_MS,
      now + 2 * STALE_STAGING_MS,
    );
    expect(removed.sort()).toEqual([...leftovers, staged('k3')].sort());
    for (const name of removed) expect(await f.get(name)).toBeUndefined();
    // The undelivered one stays for its redelivery, which completes it.
    expect(await f.get(staged('k4'))).toBeDefined();
    expect(await write(f.store, event('k4'), spec)).toBe('written');
    expect(await f.store.list(`${OUTBOUND_STAGING}/swept`)).toEqual([]);
  });

  it('lists in time order by name, whatever order the events were written in', async () => {
    const spec: OutboundFilesSpec = { path: 'sorted', format: 'json' };
    const times = ['2026-11-23T18:00:00Z', '2026-11-22T23:59:59Z', '2026-11-23T09:30:00Z'];
    for (const [i, at] of times.entries()) await write(f.store, event(`e${i}`, at), spec);
    const listed = (await f.store.list('sorted')).map((e) => e.name);
    expect([...listed].sort()).toEqual([
      'sorted/20261122T235959Z-sales-order.shipped-e1.json',
      'sorted/20261123T093000Z-sales-order.shipped-e2.json',
      'sorted/20261123T180000Z-sales-order.shipped-e0.json',
    ]);
  });
});

describe('an outbound file destination', () => {
  it('sweeps stale staging files of killed writers when it writes an event (then at most hourly)', async () => {
    const root = path.join(temp.dir, 'destination');
    const spec = { path: 'out', format: 'json' as const, types: ['*'] };
    const store = createLocalDrop({ path: root });
    const staging = path.join(root, OUTBOUND_STAGING, 'out');
    mkdirSync(staging, { recursive: true });
    const stale = path.join(staging, '20261123T164901Z-sales-order.shipped-gone.json.0badc0de.tmp');
    const fresh = path.join(staging, '20261123T164901Z-sales-order.shipped-busy.json.1badc0de.tmp');
    writeFileSync(stale, '{"id":');
    writeFileSync(fresh, '{"id":');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(stale, hourAgo, hourAgo);
    const destination = fileDestination(
      { pipeline: { name: 'p', businessId: 'ACME', events: spec }, store },
      5_000,
    );
    expect(await destination!.attempt(event('sweep-1'))).toMatchObject({ outcome: 'delivered' });
    await expect.poll(() => existsSync(stale), { timeout: 10_000 }).toBe(false);
    expect(existsSync(fresh)).toBe(true); // a write that may still be under way
    await store.close();
  });
});
