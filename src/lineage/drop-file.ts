/**
 * The lineage of one accepted dropped file, kept in the drop beside its message ids as
 * `.warehouse-ingest/state/<sha256>.lineage`, so every worker of the drop (and the `lineage`
 * command) shares it. Written to a local file chunk by chunk while the file is published, then
 * copied into the drop with the ids, before the input's state says `published`.
 *
 * Format: the first line is a JSON object naming the input (`FileLineageHeader`); every further
 * line is one record, tab-separated: `index TAB line TAB reference TAB messageId` (`line` empty
 * for JSON files). Tab-separated rather than NDJSON because a file can hold a million records:
 * what is the same for all of them is written once, a line is ~60 bytes instead of ~200, writing
 * one needs no JSON per record, and `cut -f3` or `grep -P '\tSO-1\t'` read it as it is.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { ConfirmedRecords } from '../ingest/batch.js';
import { WORK_FOLDER } from '../stores/store.js';

export const LINEAGE_FORMAT = 'warehouse-ingest-lineage/1';

/** Where the lineage of an accepted input sits in its drop, beside `state/<sha256>.ids`. */
export const lineageName = (sha256: string) => `${WORK_FOLDER}/state/${sha256}${LINEAGE_SUFFIX}`;
export const LINEAGE_SUFFIX = '.lineage';

/** What is the same for every record of the file: its first line. */
export interface FileLineageHeader {
  readonly format: typeof LINEAGE_FORMAT;
  readonly pipeline: string;
  readonly businessId: string;
  readonly kind: string;
  /** The name the file had in the drop when it was accepted. */
  readonly file: string;
  readonly sha256: string;
}

/** One record's line. */
export interface FileLineageRecord {
  readonly index: number;
  /** The record's first line in the file (CSV); undefined for JSON. */
  readonly line?: number;
  readonly reference: string;
  readonly messageId: string;
}

export interface LineageFile {
  append(confirmed: ConfirmedRecords): Promise<void>;
  /** Flushes and closes; the file is complete when this resolves. */
  end(): Promise<void>;
  /** Closes without waiting, the file left as it is (a try that failed): no open file is leaked. */
  abandon(): void;
}

/**
 * A local lineage file, written as chunks are confirmed: memory does not grow with the input.
 * Opened at the first confirmed chunk (or at `end()`), so a rejected input never opens it.
 */
export function openLineageFile(
  path: string,
  header: Omit<FileLineageHeader, 'format'>,
  { append = false } = {},
): LineageFile {
  let opened: { out: WriteStream; failed: Promise<never> } | undefined;
  const open = () => {
    const out = createWriteStream(path, { flags: append ? 'a' : 'w' });
    const failed = new Promise<never>((_, reject) => out.once('error', reject));
    failed.catch(() => undefined);
    // Appending continues an interrupted try's file, which has its header.
    if (!append) out.write(`${JSON.stringify({ format: LINEAGE_FORMAT, ...header })}\n`);
    return { out, failed };
  };
  return {
    async append({ first, messageIds, references, lines }) {
      const { out, failed } = (opened ??= open());
      let text = '';
      for (let i = 0; i < messageIds.length; i++) {
        text += `${first + i}\t${lines?.[i] ?? ''}\t${escapeField(references[i]!)}\t${messageIds[i]}\n`;
      }
      if (!out.write(text)) await Promise.race([once(out, 'drain'), failed]);
    },
    async end() {
      const { out, failed } = (opened ??= open());
      out.end();
      await Promise.race([once(out, 'finish'), failed]);
    },
    abandon() {
      if (opened && !opened.out.writableFinished) opened.out.destroy();
    },
  };
}

/**
 * Reads a lineage file and yields the records whose reference is `reference`. Lines are only
 * split when they hold `TAB reference TAB`, so a million-record file is scanned, not parsed.
 */
export async function* findInLineageFile(
  input: Readable,
  reference: string,
): AsyncGenerator<{ header: FileLineageHeader; record: FileLineageRecord }> {
  const needle = `\t${escapeField(reference)}\t`;
  let header: FileLineageHeader | undefined;
  const lines = createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const text of lines) {
      if (header === undefined) {
        header = JSON.parse(text) as FileLineageHeader;
        if (header.format !== LINEAGE_FORMAT)
          throw new Error(`not a lineage file of format ${LINEAGE_FORMAT}`);
        continue;
      }
      if (!text.includes(needle)) continue;
      const record = parseRecord(text);
      if (record.reference === reference) yield { header, record };
    }
  } finally {
    lines.close();
    input.destroy();
  }
}

function parseRecord(text: string): FileLineageRecord {
  const [index, line, escaped, messageId] = text.split('\t');
  return {
    index: Number(index),
    ...(line ? { line: Number(line) } : {}),
    reference: unescapeField(escaped ?? ''),
    messageId: messageId ?? '',
  };
}

// A record's number is any non-empty string: tabs, line breaks and backslashes are escaped as `\t`, `\n`, `\r`, `\\`.
const SPECIAL = /[\t\n\r\\]/;
const ESCAPES: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\\': '\\\\' };
const UNESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r', '\\': '\\' };

export function escapeField(value: string): string {
  return SPECIAL.test(value) ? value.replace(/[\t\n\r\\]/g, (c) => ESCAPES[c]!) : value;
}

function unescapeField(value: string): string {
  return value.includes('\\')
    ? value.replace(/\\([tnr\\])/g, (_, c: string) => UNESCAPES[c]!)
    : value;
}
