import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { createConfiguredDropRunner, openDrops } from '../drops/open.js';
import { configuredIngest } from '../ingest/configured.js';
import { openHistory } from '../history/index.js';
import { Registry } from 'prom-client';
import { createPublisher } from '../publish/index.js';
import {
  REPROCESS_STATUSES,
  selectForReprocess,
  type ReprocessedInput,
  type ReprocessStatus,
} from '../drops/reprocess.js';
import { parse, type Output } from './check-commands.js';
import { UsageError } from './help.js';
import { createProgress, type ProgressStreams } from './progress.js';

/** How long to wait for an S3 drop's lease (another worker may hold it), as `run --once` does. */
const LEASE_WAIT_MS = 60_000;
const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `reprocess --pipeline <name> [--since <date|duration>] [--status failed,...] [--dry-run]`:
 * tries again the pipeline's inputs that its drop's durable state selects, through the same
 * runner `serve` uses. Exit 0 when every input tried was accepted (or there was nothing to do),
 * 1 when some failed again (or another worker holds the drop's lease), 2 for usage errors.
 */
export async function reprocessCommand(
  args: string[],
  io: Output,
  streams: ProgressStreams,
): Promise<number> {
  const options = {
    pipeline: { type: 'string' },
    since: { type: 'string' },
    status: { type: 'string' },
    'dry-run': { type: 'boolean' },
  } as const;
  const { values, positionals } = parse('reprocess', () =>
    parseArgs({ args, options, allowPositionals: true, strict: true }),
  );
  if (positionals.length > 0)
    throw new UsageError(
      `reprocess takes no file; got ${JSON.stringify(positionals[0])} (name the pipeline with --pipeline)`,
      'reprocess',
    );
  if (!values.pipeline) throw new UsageError('reprocess needs --pipeline <name>', 'reprocess');
  const since = values.since === undefined ? undefined : parseSince(values.since, Date.now());
  const statuses = parseStatuses(values.status ?? 'failed');

  const config = loadConfig();
  const drops = openDrops(config);
  const drop = drops.find((d) => d.pipeline.name === values.pipeline);
  await Promise.all(drops.filter((d) => d !== drop).map((d) => d.store.close()));
  if (!drop) {
    const known = drops.map((d) => d.pipeline.name).join(', ') || 'none';
    throw new UsageError(
      `no pipeline named "${values.pipeline}" in ${config.pipelinesDirectory} (pipelines: ${known})`,
      'reprocess',
    );
  }
  const { pipeline, store } = drop;
  const selection = { statuses, ...(since !== undefined ? { since } : {}) };

  if (values['dry-run']) {
    try {
      const selected = await selectForReprocess(store, pipeline.name, selection);
      io.out(
        `${selected.length} input(s) of ${pipeline.name} would be reprocessed${selected.length ? ':' : ''}\n`,
      );
      for (const input of selected) {
        io.out(
          `${input.file}\t${input.status}\tattempts ${input.attempts}\t${input.location ?? '(no longer in the drop)'}\t${oneLine(input.lastError ?? '')}\n`,
        );
      }
      return 0;
    } finally {
      await store.close();
    }
  }

  // Logs go to stderr, quiet unless asked for: stdout is the command's own report.
  const log = createLogger({
    level: process.env.LOG_LEVEL || process.env.INGEST_LOG__LEVEL ? config.log.level : 'warn',
    destination: process.stderr,
  });
  const publisher = createPublisher(config, log);
  await publisher.start();
  // Reprocessed files end in the history as serve's do (the embedded file is shared with a serve beside it).
  const history = openHistory(config, log, new Registry());
  const runner = createConfiguredDropRunner(
    config,
    drop,
    configuredIngest(config, publisher, undefined, history?.ends),
    log,
  );
  // SIGINT or SIGTERM: no further input is started; the one in hand settles (or goes back) first.
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await runner.stop();
      await store.close();
      await publisher.close();
      await history?.close();
    })());
  const interrupt = () => void stop();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    // Selected once more inside the runner, under its lease; this count sizes the bar.
    const total = (await selectForReprocess(store, pipeline.name, selection)).length;
    const progress = createProgress(total, streams);
    let done = 0;
    const report = await runner.reprocess(selection, {
      waitForLeaseMs: LEASE_WAIT_MS,
      onInput: (input) => {
        progress.line(describe(input));
        progress.update(++done, input.file);
      },
    });
    progress.end();
    if (report.standby) {
      io.err(
        `warehouse-ingest: another worker holds the lease of ${pipeline.name}'s drop; nothing was reprocessed here\n`,
      );
      return 1;
    }
    io.out(`${summary(pipeline.name, report.inputs)}\n`);
    return report.inputs.some((input) => FAILED.has(input.outcome ?? 'retried')) ? 1 : 0;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await stop();
  }
}

/** Outcomes that mean the input failed again (exit 1). `skipped` (another worker has it) and `missing` are reported only. */
const FAILED = new Set(['rejected', 'dead', 'retried', 'interrupted']);

function describe(input: ReprocessedInput): string {
  const attempt = input.attempt !== undefined ? ` (attempt ${input.attempt})` : '';
  if (input.outcome === 'missing')
    return `${input.file} → missing (${input.location ?? 'no location'} is no longer in the drop)`;
  const reason = input.reason ? `: ${oneLine(input.reason)}` : '';
  return `${input.file} → ${input.outcome}${attempt}${reason}`;
}

function summary(pipeline: string, inputs: readonly ReprocessedInput[]): string {
  if (inputs.length === 0) return `nothing to reprocess in ${pipeline}`;
  const counts = new Map<string, number>();
  for (const input of inputs)
    counts.set(input.outcome ?? 'skipped', (counts.get(input.outcome ?? 'skipped') ?? 0) + 1);
  return `reprocessed ${inputs.length} input(s) of ${pipeline}: ${[...counts].map(([outcome, n]) => `${n} ${outcome}`).join(', ')}`;
}

const oneLine = (text: string) =>
  (text.length > 300 ? `${text.slice(0, 300)}…` : text).replace(/\s+/g, ' ');

/** `7d`, `12h`, `30m`, `2w` before `now`, or a date (`2026-11-01`, UTC) or date-time (`2026-11-01T09:00:00Z`). */
export function parseSince(text: string, now: number): number {
  const duration = /^(\d+)([mhdw])$/.exec(text);
  if (duration) return now - Number(duration[1]) * UNITS[duration[2]!]!;
  const date = /^(\d{4}-\d{2}-\d{2})(?:[T ]([\d:.]+)(Z|[+-]\d{2}:?\d{2})?)?$/.exec(text);
  // Without an offset, a time is UTC, as the drops' states and receipts write it.
  const at = date ? Date.parse(`${date[1]}T${date[2] ?? '00:00'}${date[3] ?? 'Z'}`) : Number.NaN;
  if (Number.isNaN(at))
    throw new UsageError(
      `--since must be a duration (7d, 12h, 30m, 2w) or a date (2026-11-01, 2026-11-01T09:00:00Z); got ${JSON.stringify(text)}`,
      'reprocess',
    );
  return at;
}

function parseStatuses(text: string): ReprocessStatus[] {
  const statuses = text.split(',').map((s) => s.trim());
  for (const status of statuses) {
    if (status === 'dead')
      throw new UsageError(
        'dead inputs are never reprocessed (they used up retry.maxAttempts)',
        'reprocess',
      );
    if (!(REPROCESS_STATUSES as readonly string[]).includes(status))
      throw new UsageError(
        `--status must be one or more of ${REPROCESS_STATUSES.join(', ')}; got ${JSON.stringify(status)}`,
        'reprocess',
      );
  }
  return statuses as ReprocessStatus[];
}
