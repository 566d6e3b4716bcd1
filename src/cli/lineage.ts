import { parseArgs } from 'node:util';
import { lineageDirectory, loadConfig } from '../config.js';
import { z } from 'zod';
import { ConfigError } from '../operator-errors.js';
import { historyStore } from '../history/index.js';
import type { HistoryStore } from '../history/store.js';
import { createLogger } from '../log.js';
import {
  describeMatch,
  searchDrop,
  searchHistory,
  searchJournal,
  type LineageMatch,
  type LineageQuery,
} from './lineage-search.js';
import { openDrops, type OpenedDrop } from '../drops/open.js';
import { KIND_NAMES } from '../records/index.js';
import { CannotRead, parse, type Output } from './check-commands.js';
import { UsageError } from './help.js';

/**
 * `lineage <number>`: which input carried a record. The history first (on unless
 * `history.enabled` is false): every batch of every source ends there, whichever instance or
 * process took it — the embedded file is shared by the processes of one machine, PostgreSQL by
 * a fleet. When it knows nothing of the number (inputs from before it, or it cannot be opened),
 * the HTTP journal day files earlier versions left (read-only, until they age out) and every
 * configured drop's lineage. Exit 0 found, 1 not found, 2 usage error, configuration, or a
 * place that could not be searched while nothing was found elsewhere.
 */
export async function lineageCommand(args: string[], io: Output): Promise<number> {
  const options = {
    kind: { type: 'string' },
    business: { type: 'string' },
    pipeline: { type: 'string' },
    since: { type: 'string' },
    json: { type: 'boolean' },
  } as const;
  const { values, positionals } = parse('lineage', () =>
    parseArgs({ args, options, allowPositionals: true, strict: true }),
  );
  const [reference, ...extra] = positionals;
  if (!reference)
    throw new UsageError(
      'lineage needs a record number (order id, SKU, RGA id or work-order id)',
      'lineage',
    );
  if (extra.length > 0)
    throw new UsageError(
      `lineage takes one record number; also got ${JSON.stringify(extra[0])}`,
      'lineage',
    );
  if (values.kind !== undefined && !(KIND_NAMES as readonly string[]).includes(values.kind))
    throw new UsageError(`--kind must be one of ${KIND_NAMES.join(', ')}`, 'lineage');
  if (values.business === '') throw new UsageError('--business must not be empty', 'lineage');
  const since = values.since === undefined ? undefined : parseSince(values.since);
  const query: LineageQuery = {
    reference,
    ...(values.kind && { kind: values.kind }),
    ...(values.business && { businessId: values.business }),
    ...(since && { since }),
  };

  const { config, drops } = configured();
  const history =
    config.environment !== 'sandbox' && config.history.enabled
      ? historyStore(config, createLogger({ level: 'silent' }))
      : undefined;
  try {
    const searched = drops.filter(
      ({ pipeline }) => values.pipeline === undefined || pipeline.name === values.pipeline,
    );
    if (values.pipeline !== undefined && searched.length === 0) {
      throw new UsageError(
        `no pipeline named ${JSON.stringify(values.pipeline)} in ${config.pipelinesDirectory}`,
        'lineage',
      );
    }
    let found = 0;
    let unsearched = 0;
    const search = async (place: string, matches: AsyncIterable<LineageMatch>) => {
      try {
        for await (const match of matches) {
          found += 1;
          io.out(`${values.json ? JSON.stringify(match) : describeMatch(match)}\n`);
        }
      } catch (error) {
        unsearched += 1;
        io.err(`warehouse-ingest: ${place} could not be searched: ${(error as Error).message}\n`);
      }
    };
    if (history) await search('the history', fromHistory(history, query, values.pipeline));
    if (found === 0) {
      // --pipeline names a drop: the HTTP journal is not searched then.
      if (values.pipeline === undefined)
        await search(
          'the HTTP lineage journal of earlier versions',
          searchJournal(lineageDirectory(config), query, config.lineage.retentionDays),
        );
      for (const drop of searched)
        await search(`drop "${drop.pipeline.name}" (${drop.store.type})`, searchDrop(drop, query));
    }
    if (found === 0 && unsearched === 0)
      io.err(`warehouse-ingest: no lineage of ${JSON.stringify(reference)}\n`);
    return found > 0 ? 0 : unsearched > 0 ? 2 : 1;
  } finally {
    await Promise.all([
      ...drops.map(({ store }) => store.close().catch(() => undefined)),
      history?.close().catch(() => undefined),
    ]);
  }
}

/** The history opened (its migrations applied) and searched; a failure to open is the search's. */
async function* fromHistory(store: HistoryStore, query: LineageQuery, pipeline?: string) {
  await store.open();
  yield* searchHistory(store, query, pipeline);
}

/** The configuration and every drop, as `serve` reads them; a broken one stops the search with exit 2. */
function configured(): { config: ReturnType<typeof loadConfig>; drops: OpenedDrop[] } {
  try {
    const config = loadConfig({ brokerRequired: false });
    return { config, drops: openDrops(config) };
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CannotRead(
        `invalid configuration (run "warehouse-ingest lint"):\n${error.message}`,
      );
    throw error;
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const TIME = z.iso.datetime({ offset: true });

/**
 * A day (UTC) or an ISO 8601 time. `new Date` alone is too lenient: it takes 2026-02-30 as
 * March 2, and a search from the wrong day answers without a word of warning.
 */
function parseSince(text: string): Date {
  const date = new Date(text);
  const valid = DAY.test(text)
    ? !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text
    : TIME.safeParse(text).success;
  if (!valid) {
    throw new UsageError(
      `--since must be a real date (2026-11-22) or an ISO 8601 time (2026-11-22T09:30:00Z); got ${JSON.stringify(text.slice(0, 40))}`,
      'lineage',
    );
  }
  return date;
}
