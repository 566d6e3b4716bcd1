/**
 * One bad row never takes its neighbours with it (issue 38, item 1). A flush merges every
 * business's rows of a window into one write, which the store takes whole or not at all; when it
 * refuses the write because of a row (`HistoryRowRefused`), the write is halved and each half
 * tried again, down to the single rows it refuses: a write of n rows with one bad row costs about
 * 2·log2(n) more writes, and only that row is lost. Any other failure (the store away, or unable
 * to write at all) is thrown as it is: it would refuse every row, so the rows are kept instead.
 */
import { HistoryRowRefused } from './refused.js';
import { type HistoryStore, type HistoryWrites, type RecordEntries, rowsOf } from './store.js';

/** What a refused row is told by in the log: whose it is and where it came from, never its content. */
export interface RefusedRow {
  readonly table: 'batches' | 'records' | 'events' | 'attempts' | 'endpoints';
  readonly businessId: string;
  readonly correlationId?: string;
  readonly batchId?: string;
  /** A record's index in its batch (the first, for several records refused at once). */
  readonly index?: number;
  readonly eventId?: string;
  readonly endpoint?: string;
  readonly rows: number;
  /** The store's reason (its message and code only: a server's detail may quote the row). */
  readonly reason: string;
}

/** Writes `writes`, narrowing a refusal down to the rows refused; answers those (none: all written). */
export function writeIsolating(store: HistoryStore, writes: HistoryWrites): Promise<RefusedRow[]> {
  // A record's batch may be in the other half: its correlation id is looked up here.
  const correlationOf = new Map((writes.batches ?? []).map((b) => [b.id, b.correlationId]));
  const attempt = async (part: HistoryWrites): Promise<RefusedRow[]> => {
    try {
      await store.write(part);
      return [];
    } catch (error) {
      if (!(error instanceof HistoryRowRefused)) throw error;
      const parts = halves(part);
      if (!parts) return [refusedRow(part, error, correlationOf)];
      const refused: RefusedRow[] = [];
      for (const half of parts) refused.push(...(await attempt(half)));
      return refused;
    }
  };
  return attempt(writes);
}

/** Writes as one, in order (batches before the records that point to them). */
export function merge(all: readonly HistoryWrites[]): HistoryWrites {
  if (all.length === 1 && all[0]) return all[0];
  return {
    batches: all.flatMap((w) => w.batches ?? []),
    records: all.flatMap((w) => w.records ?? []),
    events: all.flatMap((w) => w.events ?? []),
    attempts: all.flatMap((w) => w.attempts ?? []),
    endpointStates: all.flatMap((w) => w.endpointStates ?? []),
  };
}

/** Each row (a batch, an event …; a batch's records as one entry) as a write of its own. */
function pieces(writes: HistoryWrites): HistoryWrites[] {
  return [
    ...(writes.batches ?? []).map((b) => ({ batches: [b] })),
    ...(writes.records ?? []).map((r) => ({ records: [r] })),
    ...(writes.events ?? []).map((e) => ({ events: [e] })),
    ...(writes.attempts ?? []).map((a) => ({ attempts: [a] })),
    ...(writes.endpointStates ?? []).map((s) => ({ endpointStates: [s] })),
  ];
}

/** Two writes of about half the rows each; undefined for a single row. */
function halves(writes: HistoryWrites): [HistoryWrites, HistoryWrites] | undefined {
  const all = pieces(writes);
  if (all.length > 1) {
    const middle = all.length >> 1;
    return [merge(all.slice(0, middle)), merge(all.slice(middle))];
  }
  const records = writes.records?.[0];
  if (all.length === 1 && records && records.messageIds.length > 1) {
    const middle = records.messageIds.length >> 1;
    return [
      { records: [slice(records, 0, middle)] },
      { records: [slice(records, middle, records.messageIds.length)] },
    ];
  }
  return undefined;
}

function slice(entry: RecordEntries, from: number, to: number): RecordEntries {
  return {
    ...entry,
    first: entry.first + from,
    references: entry.references.slice(from, to),
    messageIds: entry.messageIds.slice(from, to),
    ...(entry.lines && { lines: entry.lines.slice(from, to) }),
  };
}

function refusedRow(
  writes: HistoryWrites,
  error: HistoryRowRefused,
  correlationOf: ReadonlyMap<string, string>,
): RefusedRow {
  const common = { rows: rowsOf(writes), reason: error.message.split('\n')[0] ?? '' };
  const [batch] = writes.batches ?? [];
  if (batch)
    return {
      table: 'batches',
      businessId: batch.businessId,
      correlationId: batch.correlationId,
      batchId: batch.id,
      ...common,
    };
  const [records] = writes.records ?? [];
  if (records)
    return {
      table: 'records',
      businessId: records.businessId,
      ...(correlationOf.has(records.batchId) && {
        correlationId: correlationOf.get(records.batchId),
      }),
      batchId: records.batchId,
      index: records.first,
      ...common,
    };
  const [event] = writes.events ?? [];
  if (event)
    return {
      table: 'events',
      businessId: event.businessId,
      eventId: event.id,
      ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
      ...common,
    };
  const [attempt] = writes.attempts ?? [];
  if (attempt)
    return {
      table: 'attempts',
      businessId: attempt.businessId,
      eventId: attempt.eventId,
      endpoint: attempt.endpoint,
      ...common,
    };
  const [state] = writes.endpointStates ?? [];
  return {
    table: 'endpoints',
    businessId: state?.businessId ?? '',
    endpoint: state?.endpoint ?? '',
    ...common,
  };
}
