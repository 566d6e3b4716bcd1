/**
 * The history writer's rows on disk while the store cannot take them (issue 38, item 4): a kill
 * while PostgreSQL is away must not lose them, and memory must stay bounded. Append-only JSON
 * lines in files `spool-<n>.jsonl` under the history's folder (`<dataDirectory>/history`); each
 * file is deleted only once every write in it reached the store, so a kill at any moment leaves
 * every row either written or in a file (written twice at worst, which the stores' idempotent
 * writes absorb). A replay seals the file being appended to, so rows that arrive meanwhile go to
 * a new one. Appends are not fsynced: a killed process's appends are in the page cache; only a
 * power loss may take the last ones, as it may take the embedded store's last commits.
 */
import { createReadStream } from 'node:fs';
import { appendFile, mkdir, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { type HistoryWrites, rowsOf } from './store.js';

export interface HistorySpool {
  /** Rows in the files when the spool was opened (left by an earlier process), then kept up to date by the writer. */
  open(): Promise<number>;
  /** Appends each write as one line; resolves once they are in the file. */
  append(writes: readonly HistoryWrites[]): Promise<void>;
  /**
   * Hands every spooled write to `write`, oldest first, in groups of about `rows` rows; deletes
   * each file once all of its writes went. Throws what `write` throws (the rest stays on disk).
   * Answers the rows replayed (0: there was nothing).
   */
  replay(
    write: (writes: HistoryWrites[], rows: number) => Promise<void>,
    rows: number,
  ): Promise<number>;
}

const FILE = /^spool-(\d+)\.jsonl$/;

export function createHistorySpool(directory: string): HistorySpool {
  let sequence = 0;
  let current: string | undefined;
  const name = (n: number) => path.join(directory, `spool-${String(n).padStart(12, '0')}.jsonl`);

  async function files(): Promise<string[]> {
    const names = await readdir(directory).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    return names.filter((n) => FILE.test(n)).sort();
  }

  return {
    async open() {
      let rows = 0;
      for (const file of await files()) {
        sequence = Math.max(sequence, Number(FILE.exec(file)?.[1] ?? 0));
        for await (const line of lines(path.join(directory, file))) rows += rowsOf(line);
      }
      return rows;
    },
    async append(writes) {
      if (writes.length === 0) return;
      if (!current) {
        await mkdir(directory, { recursive: true });
        current = name(++sequence);
      }
      await appendFile(current, writes.map((w) => `${JSON.stringify(w)}\n`).join(''), {
        mode: 0o600,
      });
    },
    async replay(write, rows) {
      // Sealed: appends from now on go to a new file, which this replay leaves alone.
      current = undefined;
      const sealed = sequence;
      let replayed = 0;
      const older = (await files()).filter((f) => Number(FILE.exec(f)?.[1]) <= sealed);
      for (const file of older) {
        const full = path.join(directory, file);
        let group: HistoryWrites[] = [];
        let groupRows = 0;
        for await (const writes of lines(full)) {
          group.push(writes);
          groupRows += rowsOf(writes);
          if (groupRows >= rows) {
            await write(group, groupRows);
            replayed += groupRows;
            group = [];
            groupRows = 0;
          }
        }
        if (group.length > 0) await write(group, groupRows);
        replayed += groupRows;
        await unlink(full);
      }
      return replayed;
    },
  };
}

/** The writes of one file, line by line (a line cut by a kill mid-append is skipped). */
async function* lines(file: string): AsyncGenerator<HistoryWrites> {
  const input = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of input) {
    if (line === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    yield revive(parsed as Spooled);
  }
}

type Dated<T, K extends keyof T> = Omit<T, K> & { [P in K]: string };
type Spooled = {
  batches?: Dated<NonNullable<HistoryWrites['batches']>[number], 'at'>[];
  records?: Dated<NonNullable<HistoryWrites['records']>[number], 'at'>[];
  events?: (Omit<NonNullable<HistoryWrites['events']>[number], 'receivedAt' | 'occurredAt'> & {
    receivedAt: string;
    occurredAt?: string;
  })[];
  attempts?: Dated<NonNullable<HistoryWrites['attempts']>[number], 'at'>[];
  endpointStates?: (Omit<
    NonNullable<HistoryWrites['endpointStates']>[number],
    'updatedAt' | 'failingSince'
  > & { updatedAt: string; failingSince?: string })[];
};

/** JSON gave the times as text: each becomes a `Date` again, field by field (never inside a payload). */
function revive(spooled: Spooled): HistoryWrites {
  const date = (text: string) => new Date(text);
  return {
    batches: spooled.batches?.map((b) => ({ ...b, at: date(b.at) })),
    records: spooled.records?.map((r) => ({ ...r, at: date(r.at) })),
    events: spooled.events?.map(({ occurredAt, ...e }) => ({
      ...e,
      receivedAt: date(e.receivedAt),
      ...(occurredAt === undefined ? {} : { occurredAt: date(occurredAt) }),
    })),
    attempts: spooled.attempts?.map((a) => ({ ...a, at: date(a.at) })),
    endpointStates: spooled.endpointStates?.map(({ failingSince, ...s }) => ({
      ...s,
      updatedAt: date(s.updatedAt),
      ...(failingSince === undefined ? {} : { failingSince: date(failingSince) }),
    })),
  };
}
