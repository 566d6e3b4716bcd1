/**
 * The validation pass of a large file on two cores. All records are checked before the first is
 * published (all-or-nothing), so while that pass runs the broker has nothing to do and a core
 * sits idle. A file offered in two halves (`FileHalves`) has each half decoded, validated and
 * spooled by a worker thread of its own (`half-worker.ts`), both at once; this thread only waits.
 * (It could take one half itself, but its heap is sized for serving and publishing: a small
 * worker heap per half keeps the pass's peak memory ~40 MiB lower.)
 *
 * The halves give the verdict only when each was valid on its own and nothing joins them (no order
 * in both, the count within the limit): the records, their spooled messages and ids are then
 * exactly those of one pass. Otherwise — any invalid record, a malformed half, a worker that
 * failed — the caller reads the file in one pass, which words every error as always: a file
 * that fails costs one more pass, a file that passes about half of one.
 */
import { availableParallelism } from 'node:os';
import { type ResourceLimits, Worker } from 'node:worker_threads';
import { workersOwnYoungGeneration } from '../worker-heap.js';
import { Interrupted } from '../errors.js';
import type { FileHalves, HalfOfFile } from '../decode/file.js';
import type { StreamBatch } from './batch.js';
import { spoolsInOrder, SpoolFile } from './message-spool.js';
import { RepeatFilter, type ExportedRepeats } from './repeat-filter.js';
import type { RoutingKeyFor } from './route.js';
import { spoolPlan, type PreparedStream } from './stream-publish.js';

/** What a worker thread is given: plain data only. */
export interface HalfJob {
  readonly half: HalfOfFile;
  readonly maxRecords: number | undefined;
  readonly volatilePaths: readonly string[] | undefined;
  readonly routingTemplate: string;
  readonly withReferences: boolean;
  /** Where the worker spools its half's messages (all of them: nothing stays in its memory). */
  readonly spoolFile: string;
}

/** What a worker thread answers, once. */
export type HalfReport =
  | {
      readonly ok: true;
      readonly total: number;
      readonly written: number;
      readonly repeats: ExportedRepeats;
      readonly orders: Uint32Array;
      /** Columns the business's profile ignores, found in the header (for the answer). */
      readonly ignored: readonly string[];
    }
  | { readonly ok: false; readonly reason: string };

/**
 * A worker's heap. The young generation is small, so each thread adds ~30 MiB to the process
 * rather than ~70 (a record's objects die young; a larger nursery only collects less often):
 * measured on a 1M-line drop, the validation pass as fast, the peak ~40 MiB lower. The old
 * generation is capped because V8 sizes its first collection from the cap: uncapped, each
 * worker's old generation grew by ~30 MiB of garbage through a 1M-line drop before a full
 * collection (peak 240–257 MiB; capped at 96, 174–182 MiB, the pass as fast). A worker's live
 * set is a few MiB of schemas and code (its tables are outside the heap); one that still runs
 * out fails its half, and the file takes one pass.
 */
export const WORKER_LIMITS: ResourceLimits = {
  maxYoungGenerationSizeMb: 4,
  maxOldGenerationSizeMb: 96,
};

/** Worker threads validating a half now, and how many may: one per core (this thread waits). */
let busy = 0;
const MAX_WORKERS = availableParallelism();

/** Why the halves gave no verdict, for the log; the file is then read in one pass. */
export type Undecided = { readonly decided: false; readonly reason: string };
export type Decided = {
  readonly decided: true;
  readonly total: number;
  readonly prepared: PreparedStream;
};

/**
 * Validates `batch` in its two halves at once, each in a worker thread. Resolves `decided` with
 * every record valid and spooled in order (two spool files beside `batch.spoolFile`, read as one),
 * or `undecided` with nothing left behind. Throws `Interrupted` on a stop (`batch.signal`), like
 * the one-pass validation: the threads are ended and their spools removed.
 */
export async function validateInHalves(
  batch: StreamBatch,
  halves: FileHalves,
  routingKeyFor: RoutingKeyFor,
  /** Each worker's heap (tests make it too small). */
  limits: ResourceLimits = WORKER_LIMITS,
): Promise<Decided | Undecided> {
  const { spoolFile, signal } = batch;
  if (routingKeyFor.template === undefined || spoolFile === undefined)
    return { decided: false, reason: 'no spool file or routing template' };
  if (busy + 2 > MAX_WORKERS) return { decided: false, reason: 'no cores free' };
  busy += 2;
  const { volatilePaths, withReferences } = spoolPlan(batch);
  const job = (half: HalfOfFile): HalfJob => ({
    half,
    maxRecords: batch.maxRecords,
    volatilePaths,
    routingTemplate: routingKeyFor.template!,
    withReferences,
    spoolFile: `${spoolFile}.${half.part}`,
  });
  const jobs = [job(halves.first), job(halves.second)] as const;
  const workers = jobs.map((j) => startWorker(j, limits));
  let decided = false;
  let stopped: (() => void) | undefined;
  const stop = new Promise<'stopped'>((resolve) => {
    stopped = () => resolve('stopped');
    if (signal?.aborted) stopped();
    else signal?.addEventListener('abort', stopped, { once: true });
  });
  try {
    const reports = await Promise.race([stop, bothValid([workers[0]!.report, workers[1]!.report])]);
    // A stop just ends this pass: nothing is published yet, so nothing more than an earlier try's is confirmed.
    if (reports === 'stopped') throw new Interrupted(batch.resumeAfter ?? 0);
    if (!reports.ok) return { decided: false, reason: reports.reason };
    const [first, second] = reports.halves;
    const total = first.total + second.total;
    if (batch.maxRecords !== undefined && total > batch.maxRecords)
      return { decided: false, reason: 'too many records' };
    if (!halves.apart(first.orders, second.orders))
      return { decided: false, reason: 'an order has rows in both halves' };
    for (const name of first.ignored) batch.ignoredFields?.add(name);
    decided = true;
    return {
      decided: true,
      total,
      prepared: {
        spool: spoolsInOrder([
          new SpoolFile(jobs[0].spoolFile, first.written, first.total),
          new SpoolFile(jobs[1].spoolFile, second.written, second.total),
        ]),
        repeats: RepeatFilter.union(
          RepeatFilter.imported(first.repeats),
          RepeatFilter.imported(second.repeats),
        ),
      },
    };
  } finally {
    if (stopped) signal?.removeEventListener('abort', stopped);
    // The threads have ended by themselves once they reported; otherwise (a stop, an early verdict) they are ended here.
    await Promise.all(workers.map((worker) => worker.stop()));
    busy -= 2;
    if (!decided) await Promise.all(jobs.map((j) => new SpoolFile(j.spoolFile, 0, 0).remove()));
  }
}

type Valid = Extract<HalfReport, { ok: true }>;

/**
 * Both reports once both halves are valid, or the first failure as soon as it comes: the other
 * thread need not finish.
 */
function bothValid(
  reports: readonly [Promise<HalfReport>, Promise<HalfReport>],
): Promise<{ ok: true; halves: [Valid, Valid] } | Extract<HalfReport, { ok: false }>> {
  return new Promise((resolve) => {
    for (const report of reports) void report.then((r) => !r.ok && resolve(r));
    void Promise.all(reports).then(([first, second]) => {
      if (first.ok && second.ok) resolve({ ok: true, halves: [first, second] });
    });
  });
}

/** The worker thread, its one report (a failure of the thread is a report too), and a way to stop it. */
function startWorker(
  job: HalfJob,
  limits: ResourceLimits,
): { report: Promise<HalfReport>; stop: () => Promise<void> } {
  const worker = spawnWorker(job, limits);
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
function spawnWorker(job: HalfJob, limits: ResourceLimits): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(`./half-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  const options = { workerData: job, resourceLimits: limits };
  workersOwnYoungGeneration(); // else `npm start`'s --max-semi-space-size overrides `limits`
  if (!fromSource) return new Worker(entry, options);
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
