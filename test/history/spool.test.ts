/**
 * The writer's spool on its own (the black-hole test runs it inside `serve`): what is appended
 * comes back in order with its times as dates; a replay that fails leaves every file; rows
 * appended during a replay go to a new file that replay leaves alone; a line cut by a kill is
 * skipped; files are made 0600.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchWrites } from '../../src/history/entries.js';
import { createHistorySpool } from '../../src/history/spool.js';
import type { HistoryWrites } from '../../src/history/store.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('history-spool-');

const batch = (reference: string) =>
  batchWrites(
    {
      correlationId: randomUUID(),
      businessId: 'ACME',
      source: { pipeline: 'p', fileName: 'f.csv' },
      kind: 'sales-orders',
      recordCount: 1,
      outcome: 'accepted',
      at: new Date('2026-11-28T06:00:00.000Z'),
    },
    [{ first: 0, messageIds: [randomUUID()], references: [reference], lines: [undefined] }],
  );

const references = (all: HistoryWrites[]) =>
  all.flatMap((w) => w.records ?? []).flatMap((r) => r.references);

describe('the history spool', () => {
  it('gives back what was appended, in order, with dates, and deletes a file once it went', async () => {
    const directory = path.join(temp.dir, 'order');
    const spool = createHistorySpool(directory);
    expect(await spool.open()).toBe(0);
    await spool.append([batch('A'), batch('B')]);
    await spool.append([batch('C')]);
    expect(statSync(path.join(directory, readdirSync(directory)[0] ?? '')).mode & 0o777).toBe(
      0o600,
    );
    expect(await createHistorySpool(directory).open()).toBe(6);
    const got: HistoryWrites[] = [];
    expect(await spool.replay(async (writes) => void got.push(...writes), 1000)).toBe(6);
    expect(references(got)).toEqual(['A', 'B', 'C']);
    expect(got[0]?.batches?.[0]?.at).toEqual(new Date('2026-11-28T06:00:00.000Z'));
    expect(readdirSync(directory)).toEqual([]);
  });

  it('keeps every file when a replay fails, and leaves a file begun during a replay to the next', async () => {
    const directory = path.join(temp.dir, 'failing');
    const spool = createHistorySpool(directory);
    await spool.open();
    await spool.append([batch('OLD')]);
    await expect(
      spool.replay(async () => {
        throw new Error('store away');
      }, 1000),
    ).rejects.toThrow('store away');
    expect(readdirSync(directory)).toHaveLength(1);
    const got: HistoryWrites[] = [];
    await spool.replay(async (writes) => {
      got.push(...writes);
      await spool.append([batch('NEW')]); // arrives while the replay runs
    }, 1000);
    expect(references(got)).toEqual(['OLD']);
    expect(readdirSync(directory)).toHaveLength(1);
    const next: HistoryWrites[] = [];
    await spool.replay(async (writes) => void next.push(...writes), 1000);
    expect(references(next)).toEqual(['NEW']);
  });

  it('skips a line a kill cut in the middle', async () => {
    const directory = path.join(temp.dir, 'torn');
    const spool = createHistorySpool(directory);
    await spool.open();
    await spool.append([batch('WHOLE')]);
    const [file] = readdirSync(directory);
    appendFileSync(path.join(directory, file ?? ''), '{"batches":[{"id":"');
    const again = createHistorySpool(directory);
    expect(await again.open()).toBe(2);
    const got: HistoryWrites[] = [];
    await again.replay(async (writes) => void got.push(...writes), 1000);
    expect(references(got)).toEqual(['WHOLE']);
  });
});
