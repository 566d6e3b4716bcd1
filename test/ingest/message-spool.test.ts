import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MessageSpool,
  SpoolFile,
  spoolsInOrder,
  type SpooledMessages,
} from '../../src/ingest/message-spool.js';

const digestOf = (i: number) => createHash('sha256').update(String(i)).digest();

interface Written {
  digest: Buffer;
  routingKey: string;
  reference: string;
  line: number | undefined;
  body: string;
}

/** Records crossing many 1 MiB blocks: short and long bodies, one larger than a block, keys that change (one very long). */
function records(count: number): Written[] {
  return Array.from({ length: count }, (_, i) => ({
    digest: digestOf(i),
    routingKey:
      i === 4321
        ? `sales-orders.${'é'.repeat(70_000)}` // longer than any 16-bit length
        : i % 1000 < 500
          ? 'sales-orders.ACME'
          : `sales-orders.ACME.site-${i % 3}`,
    reference: i % 7 === 0 ? '' : `SO-${i}-ü`,
    line: i % 5 === 0 ? undefined : i * 2 + 1,
    body: JSON.stringify({
      orderNumber: `SO-${i}`,
      note: i === 1234 ? 'x'.repeat(3 << 20) : `ligne ${i} – café ✓ 🚚`.repeat((i % 40) + 1),
    }),
  }));
}

/** Appends `input`, then reads the whole spool back and compares it with `all`. */
async function roundTrip(spool: MessageSpool, input: Written[], all = input): Promise<void> {
  await fill(spool, input);
  await readsBack(spool, all);
}

async function fill(spool: MessageSpool, input: Written[]): Promise<void> {
  for (const r of input) {
    const pending = spool.append(r.digest, r.routingKey, r.reference, r.line, r.body);
    if (pending) await pending;
  }
  await spool.finish();
}

async function readsBack(spool: SpooledMessages, all: Written[]): Promise<void> {
  expect(spool.size).toBe(all.length);
  let i = 0;
  for await (const m of spool.read()) {
    const r = all[i]!;
    expect(Buffer.compare(m.digest, r.digest), `digest ${i}`).toBe(0);
    expect(m.routingKey, `key ${i}`).toBe(r.routingKey);
    expect(m.reference, `reference ${i}`).toBe(r.reference);
    expect(m.line, `line ${i}`).toBe(r.line);
    expect(m.body.toString('utf8'), `body ${i}`).toBe(r.body);
    i += 1;
  }
  expect(i).toBe(all.length);
}

describe('MessageSpool', () => {
  const folders: string[] = [];
  afterEach(async () => {
    for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
  });

  const spoolFile = async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'spool-test-'));
    folders.push(folder);
    return path.join(folder, 'more', 'messages.spool');
  };

  it('gives back every record as appended, in order, in memory', async () => {
    const spool = new MessageSpool();
    await roundTrip(spool, records(6000));
    await spool.remove();
  });

  it('gives back every record as appended from its file (owner only), and removes it', async () => {
    const file = await spoolFile();
    const spool = new MessageSpool(file, 0);
    await roundTrip(spool, records(6000));
    const { size, mode } = await stat(file);
    expect(size).toBeGreaterThan(3 << 20); // it really went to the file, over several blocks
    expect(mode & 0o777).toBe(0o600);
    await spool.remove();
    expect(await readdir(path.dirname(file))).toEqual([]);
  });

  it('moves to its file once it holds more than it keeps in memory, and reads back the same', async () => {
    const file = await spoolFile();
    const spool = new MessageSpool(file, 2 << 20);
    const input = records(6000);
    const afterTheFirstBlocks = input.slice(0, 300);
    for (const r of afterTheFirstBlocks)
      await spool.append(r.digest, r.routingKey, r.reference, r.line, r.body);
    expect(existsSync(file)).toBe(false); // still under 2 MiB
    await roundTrip(spool, input.slice(300), input);
    expect(existsSync(file)).toBe(true);
    await spool.remove();
    expect(existsSync(file)).toBe(false);
  });

  it('makes no file for what fits in memory', async () => {
    const file = await spoolFile();
    const spool = new MessageSpool(file);
    await roundTrip(spool, records(100));
    expect(existsSync(file)).toBe(false);
    await spool.remove();
  });

  it('never takes over a file that exists', async () => {
    const file = await spoolFile();
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, 'not ours');
    const spool = new MessageSpool(file, 0);
    const appendAll = async () => {
      for (const r of records(2000))
        await spool.append(r.digest, r.routingKey, r.reference, r.line, r.body);
      await spool.finish();
    };
    await expect(appendAll()).rejects.toMatchObject({ code: 'EEXIST' });
    await spool.remove();
    expect(await readFile(file, 'utf8')).toBe('not ours');
  });

  it('reads an empty spool as no records', async () => {
    const spool = new MessageSpool();
    await spool.finish();
    const read = [];
    for await (const m of spool.read()) read.push(m);
    expect(read).toEqual([]);
  });

  it('keeps its file for another reader (a second half), which reads it back after the first spool, then removes both', async () => {
    const input = records(6000);
    const firstFile = await spoolFile();
    const secondFile = await spoolFile();
    const first = new MessageSpool(firstFile, 1 << 20);
    await fill(first, input.slice(0, 2500));
    const second = new MessageSpool(secondFile, 0);
    await fill(second, input.slice(2500));
    const { written, count } = await second.keepFile();
    expect(count).toBe(3500);
    expect((await stat(secondFile)).size).toBe(written);
    const both = spoolsInOrder([first, new SpoolFile(secondFile, written, count)]);
    await readsBack(both, input);
    await both.remove();
    expect(existsSync(firstFile)).toBe(false);
    expect(existsSync(secondFile)).toBe(false);
  });

  it('refuses to keep a file for a spool that still holds records in memory', async () => {
    const spool = new MessageSpool(await spoolFile());
    await fill(spool, records(10));
    await expect(spool.keepFile()).rejects.toThrow('still holds records in memory');
  });
});
