/**
 * The lineage of HTTP batches: a local append-only journal, one NDJSON file per UTC day
 * (`lineage-YYYY-MM-DD.ndjson`), one line per accepted record. NDJSON here (a drop's lineage is
 * tab-separated) because batches of every endpoint and business interleave in one file: each
 * line must carry its own batch's facts, and `jq` reads it as it is.
 *
 * `record()` only queues: the 202 never waits for the disk. One write is in flight at a time and
 * takes everything queued meanwhile, so appends are batched as load grows. The day file stays
 * open between writes: opening, appending and closing it per write (with a `mkdir` first) was
 * ~11% of a 1-record batch's CPU. A write that fails is
 * logged and counted, and its lines are lost — never turned into an error for a batch the broker
 * has confirmed (the client would retry a batch that was accepted).
 */
import { type FileHandle, mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { lineageDirectory, type Config } from '../config.js';
import type { Logger } from '../log.js';
import type { ConfirmedRecords } from '../ingest/batch.js';

export interface LineageJournalOptions {
  /** Folder of the day files; made when first written to. */
  readonly directory: string;
  /** Days kept, today (UTC) included; older day files are deleted at the first write of each day. */
  readonly retentionDays: number;
  /** Told of every failed write with how many lines it lost (metrics). */
  readonly onWriteFailure?: (lines: number) => void;
  /**
   * Lines waiting beyond this many bytes (the disk stalls) are dropped, and reported as a failed write.
   * @default 33554432 (32 MiB)
   */
  readonly maxPendingBytes?: number;
  /**
   * How long lines are gathered before a write. A crash loses at most what waits (as it loses
   * what a write in flight carries); a graceful stop writes it (`close`).
   * @default 20
   */
  readonly batchMs?: number;
  /**
   * How often the open day file is checked for having been removed or renamed away.
   * @default 1000
   */
  readonly recheckMs?: number;
}

/** The facts of one accepted HTTP batch. */
export interface HttpBatchInput {
  readonly businessId: string;
  readonly kind: string;
  /** The endpoint path, e.g. `/api/v2/sales-orders`. */
  readonly endpoint: string;
  readonly correlationId: string;
  /** When the broker confirmed the batch. */
  readonly at: Date;
}

/** One journal line, as written and as read back. */
export interface JournalEntry {
  readonly reference: string;
  readonly messageId: string;
  readonly index: number;
  /** The record's first line in a CSV body. */
  readonly line?: number;
  readonly kind: string;
  readonly businessId: string;
  readonly endpoint: string;
  readonly correlationId: string;
  /** ISO 8601, UTC. */
  readonly at: string;
}

export interface LineageJournal {
  /** Queues the lineage of an accepted batch and returns at once; never throws. */
  record(input: HttpBatchInput, confirmed: readonly ConfirmedRecords[]): void;
  /** Resolves once everything queued so far is written (or its loss reported). */
  flush(): Promise<void>;
  /** Flushes, then closes the day file (at shutdown). */
  close(): Promise<void>;
}

export const JOURNAL_PREFIX = 'lineage-';
export const JOURNAL_SUFFIX = '.ndjson';
const DAY_FILE = /^lineage-(\d{4}-\d{2}-\d{2})\.ndjson$/;

export const journalFile = (day: string) => `${JOURNAL_PREFIX}${day}${JOURNAL_SUFFIX}`;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

export function createLineageJournal(options: LineageJournalOptions, log: Logger): LineageJournal {
  const { directory, retentionDays } = options;
  const maxPending = options.maxPendingBytes ?? 32 * 1024 * 1024;
  const recheckMs = options.recheckMs ?? 1000;
  const batchMs = options.batchMs ?? 20;
  /** Lines per day file, waiting for the writer. */
  let pending = new Map<string, { text: string[]; lines: number }>();
  let pendingBytes = 0;
  let writing: Promise<void> | undefined;
  let waiting: NodeJS.Timeout | undefined;
  let prunedFor = '';
  /** The day file open for appending, and when it was last seen still linked at its path. */
  let file: { day: string; handle: FileHandle; checkedAt: number } | undefined;

  const closeFile = async () => {
    const open = file;
    file = undefined;
    await open?.handle.close().catch(() => undefined);
  };

  /**
   * The day's file, opened (folder made) on first use and when the day changes. A file removed or
   * renamed while open (an operator's clean-up, a rotation) is noticed within `recheckMs` and
   * opened again at its path, so lines never keep going to an unlinked file.
   */
  async function dayFile(day: string): Promise<FileHandle> {
    const now = Date.now();
    if (file?.day === day && now - file.checkedAt < recheckMs) return file.handle;
    if (file?.day === day) {
      const stat = await file.handle.stat();
      const atPath = await statPath(path.join(directory, journalFile(day)));
      if (stat.nlink > 0 && atPath?.ino === stat.ino) {
        file.checkedAt = now;
        return file.handle;
      }
    }
    await closeFile();
    await mkdir(directory, { recursive: true });
    const handle = await open(path.join(directory, journalFile(day)), 'a');
    file = { day, handle, checkedAt: now };
    return handle;
  }

  const lost = (lines: number, error: unknown) => {
    options.onWriteFailure?.(lines);
    log.error(
      { err: error, reason: (error as Error).message, lines, directory },
      'lineage journal write failed: these records have no HTTP lineage',
    );
  };

  async function prune(today: string): Promise<void> {
    prunedFor = today;
    const oldest = dayOf(new Date(Date.parse(today) - (retentionDays - 1) * 86_400_000));
    try {
      for (const name of await readdir(directory)) {
        const day = DAY_FILE.exec(name)?.[1];
        if (day !== undefined && day < oldest) await unlink(path.join(directory, name));
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      log.warn(
        { reason: (error as Error).message, directory },
        'could not delete old lineage journal files',
      );
    }
  }

  /** One writer at a time; lines queued while it finishes start the next. */
  /**
   * Lines are gathered for `batchMs` before they are written: at hundreds of small batches a
   * second, one write then carries many batches instead of one syscall each.
   */
  function write(): void {
    if (writing || waiting) return;
    waiting = setTimeout(startNow, batchMs);
  }

  function startNow(): void {
    clearTimeout(waiting);
    waiting = undefined;
    writing ??= drain().finally(() => {
      writing = undefined;
      if (pending.size > 0) write();
    });
  }

  async function settle(): Promise<void> {
    while (writing || waiting) {
      if (waiting) startNow();
      await writing;
    }
  }

  async function drain(): Promise<void> {
    while (pending.size > 0) {
      const taken = pending;
      pending = new Map();
      pendingBytes = 0;
      for (const [day, { text, lines }] of taken) {
        try {
          await (await dayFile(day)).write(text.join(''));
        } catch (error) {
          await closeFile(); // opened afresh for the next write
          lost(lines, error);
        }
      }
      const today = dayOf(new Date());
      if (prunedFor !== today) await prune(today);
    }
  }

  return {
    record(input, confirmed) {
      const day = dayOf(input.at);
      // What is the same for every line of the batch, serialised once.
      const tail = `,"kind":${JSON.stringify(input.kind)},"businessId":${JSON.stringify(input.businessId)},"endpoint":${JSON.stringify(input.endpoint)},"correlationId":${JSON.stringify(input.correlationId)},"at":"${input.at.toISOString()}"}\n`;
      let text = '';
      let lines = 0;
      for (const { first, messageIds, references, lines: inputLines } of confirmed) {
        for (let i = 0; i < messageIds.length; i++) {
          const line = inputLines?.[i];
          text += `{"reference":${JSON.stringify(references[i])},"messageId":"${messageIds[i]}","index":${first + i}${line === undefined ? '' : `,"line":${line}`}${tail}`;
        }
        lines += messageIds.length;
      }
      if (lines === 0) return;
      if (pendingBytes + text.length > maxPending) {
        lost(lines, new Error(`more than ${maxPending} bytes of lineage are waiting for the disk`));
        return;
      }
      const queued = pending.get(day) ?? { text: [], lines: 0 };
      queued.text.push(text);
      queued.lines += lines;
      pending.set(day, queued);
      pendingBytes += text.length;
      write();
    },
    flush: settle,
    async close() {
      await settle();
      await closeFile();
    },
  };
}

async function statPath(file: string): Promise<{ ino: number } | undefined> {
  try {
    return await stat(file);
  } catch {
    return undefined;
  }
}

/** The day files of a journal folder, oldest first, from `sinceDay` on when given. */
export async function journalFiles(directory: string, sinceDay?: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((name) => {
      const day = DAY_FILE.exec(name)?.[1];
      return day !== undefined && (sinceDay === undefined || day >= sinceDay);
    })
    .sort()
    .map((name) => path.join(directory, name));
}

/** The line prefix of every entry for `reference`: lines are tested with `startsWith` before any is parsed. */
export const entryPrefix = (reference: string) => `{"reference":${JSON.stringify(reference)},`;

/**
 * The HTTP lineage journal as configured. None in the sandbox, which publishes nothing to trace,
 * and none with the history on: the history keeps each accepted batch with its records' numbers,
 * for every instance sharing it, so a second copy per instance would only cost each request's CPU.
 */
export function openLineageJournal(
  config: Readonly<Config>,
  log: Logger,
  metrics: { lineageLost(records: number): void },
): LineageJournal | undefined {
  if (config.environment === 'sandbox' || config.history.enabled) return undefined;
  return createLineageJournal(
    {
      directory: lineageDirectory(config),
      retentionDays: config.lineage.retentionDays,
      onWriteFailure: (records) => metrics.lineageLost(records),
    },
    log.child({ component: 'lineage' }),
  );
}
