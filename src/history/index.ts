/**
 * The history as `serve` runs it: the store the configuration names (PostgreSQL when
 * `history.url` is set, else the embedded one under `dataDirectory`), its writer, and the
 * hourly prune of each table after its retention. None in the sandbox (nothing is published
 * there) or when `history.enabled` is false. Nothing here waits for the store: the writer opens
 * it (migrations) with its first write.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { createEmbeddedHistory } from './embedded/index.js';
import { createHistoryMetrics } from './metrics.js';
import { openedOnce } from './opened.js';
import { createPostgresHistory } from './postgres/index.js';
import type { HistoryConfig } from './schema.js';
import {
  PRUNED_TABLES,
  type EndpointStateEntry,
  type HistoryStore,
  type PrunedTable,
} from './store.js';
import { createHistorySpool } from './spool.js';
import { createHistoryWriter, type HistoryWriter } from './writer.js';
import { historyBatchEnds, type HistoryBatchEnds } from './batch-ends.js';

/** The configuration the history reads. */
export interface HistorySource {
  readonly environment: string;
  readonly dataDirectory: string;
  readonly history: HistoryConfig;
  /** Whether instances share state through Redis (a fleet): the embedded history then warns. */
  readonly sharedState?: {
    readonly redis: { readonly url?: string | undefined; readonly sentinels?: unknown };
  };
}

export interface History {
  readonly store: HistoryStore;
  readonly writer: HistoryWriter;
  /** The one end of every batch, written by `writer` (what `configuredIngest` takes). */
  readonly ends: HistoryBatchEnds;
  /** Every business's endpoint states (the events worker's start-up), once the store is open. */
  endpointStates(): Promise<EndpointStateEntry[]>;
  /** Writes what is queued, stops the prune, closes the store. */
  close(): Promise<void>;
}

const PRUNE_EVERY_MS = 3_600_000;
/** How often the prune's time is looked at (and the window of its first run). */
const PRUNE_CHECK_MS = 60_000;

/** The store the configuration names, not opened. */
export function historyStore(source: HistorySource, log: Logger): HistoryStore {
  const { history } = source;
  if (history.url !== undefined) {
    return createPostgresHistory({
      url: history.url,
      poolSize: history.poolSize,
      onIdleError: (error) =>
        log.warn({ reason: error.message }, 'history: an idle PostgreSQL connection failed'),
    });
  }
  return createEmbeddedHistory({ directory: historyDirectory(source) });
}

export const historyDirectory = (source: HistorySource) =>
  path.resolve(source.history.directory ?? path.join(source.dataDirectory, 'history'));

/**
 * Where the history is, for a log line: the embedded file's path, or PostgreSQL's host, port
 * and database — never its user, password or parameters (a `?password=` is a credential too).
 */
export function historyWhere(source: HistorySource): string {
  const { url } = source.history;
  if (url === undefined) return path.join(historyDirectory(source), 'history.sqlite');
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return '[unparseable url]';
  }
}

export function openHistory(
  source: HistorySource,
  log: Logger,
  registry: Registry,
): History | undefined {
  if (source.environment === 'sandbox') return undefined;
  if (!source.history.enabled) {
    // An operator's choice, said once at start-up; a URL beside it would otherwise be ignored unseen.
    log.warn(
      source.history.url === undefined
        ? {}
        : { ignored: 'history.url', where: historyWhere(source) },
      source.history.url === undefined
        ? 'history: off (history.enabled false): no partner API reads of batches, records or events, no portal lists, no lineage of new batches, no resend or recover, endpoint switches forgotten at restart'
        : 'history: off (history.enabled false), so history.url (HISTORY_URL) is not used: remove one of the two',
    );
    return undefined;
  }
  const historyLog = log.child({ component: 'history' });
  const store = openedOnce(historyStore(source, historyLog));
  const metrics = createHistoryMetrics(registry);
  const writer = createHistoryWriter({
    store,
    log: historyLog,
    metrics,
    spool: createHistorySpool(path.join(historyDirectory(source), 'spool')),
    maxPendingRows: source.history.maxPendingRows,
    flushMs: source.history.flushMs,
  });
  metrics.watch(writer);
  historyLog.info(
    { store: store.name, where: historyWhere(source), retentionDays: source.history.retentionDays },
    'history: on, opened with the first write',
  );
  const redis = source.sharedState?.redis;
  if (!source.history.url && (redis?.url !== undefined || redis?.sentinels !== undefined))
    historyLog.warn(
      { where: historyWhere(source) },
      'history: embedded, while instances share state through Redis: each instance of a fleet keeps its own file, so each sees (and answers with) a different history; a fleet sets history.url (HISTORY_URL) to one PostgreSQL database (docs/operations-instances.md)',
    );
  if (!source.history.url && existsSync(path.join(historyDirectory(source), 'PG_VERSION')))
    historyLog.warn(
      { directory: historyDirectory(source) },
      'history: this folder also holds the PGlite database of an earlier version, which is no longer read (its rows are not carried over to history.sqlite); remove its other files to free the space',
    );
  // The first prune comes within a minute of the first write (at a random moment, so that a
  // fleet started at once does not delete at once), then hourly; a process that stops before
  // it (`run --once`, an instance restarted more often than hourly) prunes as it closes
  // (issue 38, item 19: such instances never pruned).
  let nextPruneAt = Date.now() + Math.random() * PRUNE_CHECK_MS;
  let pruned = false;
  let pruning: Promise<void> | undefined;
  const prune = () =>
    (pruning ??= pruneOnce(store, writer, source.history, historyLog).finally(() => {
      pruning = undefined;
    }));
  const timer = setInterval(() => {
    if (Date.now() < nextPruneAt || writer.reachable !== true) return;
    nextPruneAt = Date.now() + PRUNE_EVERY_MS;
    pruned = true;
    void prune();
  }, PRUNE_CHECK_MS);
  timer.unref();
  return {
    store,
    writer,
    ends: historyBatchEnds(writer),
    endpointStates: () => store.endpointStates({ operator: true }),
    async close() {
      clearInterval(timer);
      await writer.close();
      await pruning;
      if (!pruned) await prune();
      await store.close();
    },
  };
}

/** Deletes what is past each table's retention; only once the writer has reached the store. */
export async function pruneOnce(
  store: HistoryStore,
  writer: HistoryWriter,
  history: HistoryConfig,
  log: Logger,
  now = Date.now(),
): Promise<void> {
  if (writer.reachable !== true) return;
  const olderThan = Object.fromEntries(
    PRUNED_TABLES.map((table) => [
      table,
      new Date(now - history.retentionDays[table] * 86_400_000),
    ]),
  ) as Record<PrunedTable, Date>;
  try {
    const pruned = await store.prune(olderThan);
    log.info({ pruned }, 'history: rows past their retention deleted');
  } catch (error) {
    log.warn(
      { reason: (error as Error).message },
      'history: the prune failed; tried again in an hour',
    );
  }
}
