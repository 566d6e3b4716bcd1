import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageSpool } from '../../src/pipeline/message-spool.js';

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

async function roundTrip(spool: MessageSpool, input: Written[]): Promise<void> {
  for (const r of input) {
    const pending = spool.append(r.digest, r.routingKey, r.reference, r.line, r.body);
    if (pending) await pending;
  }
  await spool.finish();
  expect(spool.size).toBe(input.length);
  let i = 0;
  for await (const m of spool.read()) {
    const r = input[i]!;
    expect(Buffer.compare(m.digest, r.digest), `digest ${i}`).toBe(0);
    expect(m.routingKey, `key ${i}`).toBe(r.routingKey);
    expect(m.reference, `reference ${i}`).toBe(r.reference);
    expect(m.line, `line ${i}`).toBe(r.line);
    expect(m.body.toString('utf8'), `body ${i}`).toBe(r.body);
    i += 1;
  }
  expect(i).toBe(input.length);
}

describe('MessageSpool', () => {
  const folders: string[] = [];
  afterEach(async () => {
    for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
  });

  it('gives back every record as appended, in order, in memory', async () => {
    const spool = await MessageSpool.create();
    await roundTrip(spool, records(6000));
    await spool.remove();
  });

  it('gives back every record as appended from a file readable by its owner only, and removes it', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'spool-test-'));
    folders.push(folder);
    const file = path.join(folder, 'messages.spool');
    const spool = await MessageSpool.create(file);
    await roundTrip(spool, records(6000));
    const { size, mode } = await stat(file);
    expect(size).toBeGreaterThan(3 << 20); // it really went to the file, over several blocks
    expect(mode & 0o777).toBe(0o600);
    await spool.remove();
    expect(await readdir(folder)).toEqual([]);
  });

  it('never takes over a file that exists', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'spool-test-'));
    folders.push(folder);
    const file = path.join(folder, 'messages.spool');
    await (await MessageSpool.create(file)).finish();
    await expect(MessageSpool.create(file)).rejects.toMatchObject({ code: 'EEXIST' });
  });

  it('reads an empty spool as no records', async () => {
    const spool = await MessageSpool.create();
    await spool.finish();
    const read = [];
    for await (const m of spool.read()) read.push(m);
    expect(read).toEqual([]);
  });
});
