/**
 * The validation pass of a large file on two cores. All records are checked before the first is
 * published (all-or-nothing), so while that pass runs the broker has nothing to do and one core
 * sits idle; a file offered in two halves (`FileHalves`) has its second half decoded, validated
 * and spooled by a worker thread (`half-worker.ts`) while this thread does the first.
 *
 * The halves give the verdict only when each was valid on its own and nothing joins them (no order
 * in both, the count within the limit): the records, their spooled messages and ids are then
 * exactly those of one pass. Otherwise — any invalid record, a malformed half, a worker that
 * failed — the caller reads the file in one pass, which words every error as always: a file
 * that fails costs one more pass, a file that passes half of one.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Interrupted } from '../errors.js';
import type { FileHalves } from '../decode/file.js';
import type { StreamBatch } from './batch.js';
import { spoolsInOrder, SpoolFile } from './message-spool.js';
import { RepeatFilter, type ExportedRepeats } from './repeat-filter.js';
import type { RoutingKeyFor } from './route.js';
import type { PreparedStream, StreamSpooler } from './stream-publish.js';
import { validateStream, type RecordCheck } from './validate-batch.js';

/** What the worker thread is given: plain data only. */
export interface HalfJob {
  readonly second: FileHalves['second'];
  readonly maxRecords: number | undefined;
  readonly volatilePaths: readonly string[] | undefined;
  readonly routingTemplate: string;
  readonly withReferences: boolean;
  /** Where the worker spools the second half's messages (all of them: nothing stays in its memory). */
  readonly spoolFile: string;
}

/** What the worker thread answers, once. */
export type HalfReport =
  | {
      readonly ok: true;
      readonly total: number;
      readonly written: number;
      readonly repeats: ExportedRepeats;
      readonly orders: Uint32Array;
    }
  | { readonly ok: false; readonly reason: string };

/**
 * The worker's young generation: small, so the thread adds ~30 MiB to the process rather than
 * ~70 (each record's objects die young; a larger nursery only collects less often). Measured on
 * a 1M-line drop: the validation pass as fast, the peak ~40 MiB lower.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/** Worker threads validating a second half now, and how many may (one core is this thread's). */
let busy = 0;
const MAX_WORKERS = Math.max(0, availableParallelism() - 1);

/** Why the halves gave no verdict, for the log; the file is then read in one pass. */
export type Undecided = { readonly decided: false; readonly reason: string };
export type Decided = {
  readonly decided: true;
  readonly total: number;
  readonly prepared: PreparedStream;
};

/**
 * Validates `batch` in its two halves at once: the first here into `first` (the batch's own
 * spooler), the second in a worker thread. Resolves `decided` with every record valid and spooled
 * in order, or `undecided` (nothing left behind but `first`'s spool, which the caller removes).
 * Throws `Interrupted` on a stop, like the one-pass validation.
 */
export async function validateInHalves(
  batch: StreamBatch,
  halves: FileHalves,
  first: StreamSpooler,
  routingKeyFor: RoutingKeyFor,
  check: RecordCheck | undefined,
): Promise<Decided | Undecided> {
  const { spoolFile } = batch;
  if (routingKeyFor.template === undefined || spoolFile === undefined)
    return { decided: false, reason: 'no spool file or routing template' };
  if (busy >= MAX_WORKERS) return { decided: false, reason: 'no core free' };
  busy += 1;
  const job: HalfJob = {
    second: halves.second,
    maxRecords: batch.maxRecords,
    volatilePaths: batch.volatilePaths,
    routingTemplate: routingKeyFor.template,
    withReferences: batch.onLineage !== undefined || batch.onSkipped !== undefined,
    spoolFile: `${spoolFile}.second`,
  };
  const second = new SpoolFile(job.spoolFile, 0, 0);
  const worker = startWorker(job);
  let decided = false;
  try {
    let firstTotal: number | undefined;
    try {
      const verdict = await validateStream(
        { ...batch, open: () => halves.first() },
        first.onValid,
        check,
      );
      await first.spool.finish();
      if (verdict.ok) firstTotal = verdict.total;
    } catch (error) {
      if (error instanceof Interrupted) throw error;
      // A malformed first half, an unreadable file: one pass tells exactly what and where.
    }
    if (firstTotal === undefined) return { decided: false, reason: 'the first half is not valid' };
    const report = await worker.report;
    if (!report.ok) return { decided: false, reason: report.reason };
    const total = firstTotal + report.total;
    if (batch.maxRecords !== undefined && total > batch.maxRecords)
      return { decided: false, reason: 'too many records' };
    if (!halves.apart(report.orders))
      return { decided: false, reason: 'an order has rows in both halves' };
    decided = true;
    return {
      decided: true,
      total,
      prepared: {
        spool: spoolsInOrder([
          first.spool,
          new SpoolFile(job.spoolFile, report.written, report.total),
        ]),
        repeats: RepeatFilter.union(first.repeats, RepeatFilter.imported(report.repeats)),
      },
    };
  } finally {
    busy -= 1;
    if (!decided) {
      await worker.stop();
      await second.remove();
    }
  }
}

/** The worker thread, its one report (a failure of the thread is a report too), and a way to stop it. */
function startWorker(job: HalfJob): { report: Promise<HalfReport>; stop: () => Promise<void> } {
  const worker = spawnWorker(job);
  const report = new Promise<HalfReport>((resolve) => {
    worker.once('message', resolve);
    worker.once('error', (error) => resolve({ ok: false, reason: error.message }));
    worker.once('exit', (code) =>
      resolve({ ok: false, reason: `the worker thread ended (exit code ${code})` }),
    );
  });
  return {
    report,
    stop: async () => {
      await worker.terminate();
    },
  };
}

/**
 * The built service runs `half-worker.js`; from source (the tests, under tsx or vitest) the
 * worker is the `.ts` file, which a new thread can only load with tsx's loader registered in it.
 */
function spawnWorker(job: HalfJob): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(`./half-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  const options = { workerData: job, resourceLimits: WORKER_LIMITS };
  if (!fromSource) return new Worker(entry, options);
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
