/**
 * The day files (`lineage-YYYY-MM-DD.ndjson`, one JSON line per accepted record) that the HTTP
 * lineage journal of earlier versions wrote on each instance. Nothing writes them any more: every
 * batch ends in the history (ingest/batch-end.ts). `lineage` still searches them, read-only,
 * until they age out — a day file older than `lineage.retentionDays` is no longer read — so a
 * record accepted before the upgrade stays findable for as long as it was promised to be; the
 * folder may then be removed (docs/decisions.md#the-http-lineage-journal-retired).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** One journal line, as written by earlier versions. */
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

const DAY_FILE = /^lineage-(\d{4}-\d{2}-\d{2})\.ndjson$/;

/**
 * The day files of a journal folder, oldest first: from `sinceDay` on when given, and never a
 * day older than `retentionDays` before `now` (today, UTC, counts as one).
 */
export async function journalFiles(
  directory: string,
  {
    sinceDay,
    retentionDays,
    now = new Date(),
  }: {
    sinceDay?: string | undefined;
    retentionDays: number;
    now?: Date;
  },
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const oldest = new Date(now.getTime() - (retentionDays - 1) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  const from = sinceDay !== undefined && sinceDay > oldest ? sinceDay : oldest;
  return names
    .filter((name) => {
      const day = DAY_FILE.exec(name)?.[1];
      return day !== undefined && day >= from;
    })
    .sort()
    .map((name) => path.join(directory, name));
}

/** The line prefix of every entry for `reference`: lines are tested with `startsWith` before any is parsed. */
export const entryPrefix = (reference: string) => `{"reference":${JSON.stringify(reference)},`;
