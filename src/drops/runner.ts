import { availableParallelism, hostname } from 'node:os';
import type { Environment } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { DropMetrics } from './metrics.js';
import type { Ingest } from '../ingest/batch.js';
import type { PipelineDefinition } from './definition.js';
import type { ProfilesSource } from '../records/legacy/index.js';
import { claim, takeOverStale } from './claims.js';
import { createFileHandler } from './try/handler.js';
import type { HandledOutcome } from '../vocabulary.js';
import { countOutcome, emptySummary, type RunSummary } from './run-summary.js';
import { OWN_LEASE, type DropLease } from './lease.js';
import { createFileProcessor } from './try/index.js';
import { createLooks } from './look.js';
import { createStateCensus } from './state/census.js';
import { createHousekeeping } from './sweep.js';
import { createNameGuard } from './unusable-names.js';
import { reportedLook, startPipelineJobs } from './runner-jobs.js';
import {
  reprocessSelected,
  selectForReprocess,
  type ReprocessReport,
  type ReprocessSelection,
  type ReprocessedInput,
} from './reprocess.js';
import { assertSafeName, type DropStore } from '../stores/store.js';

export interface DropRunnerOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: ProfilesSource;
  /** Said in every receipt; in the sandbox an accepted file's receipt says `validated`. @default 'production' */
  readonly environment?: Environment;
  readonly log: Logger;
  /** Local folder for copies of files being processed. */
  readonly spoolDirectory: string;
  /**
   * Who may work on the drop now. Stores without atomic rename (S3) need one shared by every
   * worker (`createRabbitMqLease`); the default suits a single worker, or a store with claims.
   * @default OWN_LEASE (always held)
   */
  readonly lease?: DropLease;
  /** Names this worker's claims. @default `<hostname>-<pid>` */
  readonly workerId?: string;
  /** JSON files are parsed whole: larger ones are refused. @default 268435456 (256 MiB) */
  readonly maxJsonBytes?: number;
  /**
   * A v1 CSV file of at least this many bytes, or a v2-JSON file of at least 8 times as many
   * (`JSON_HALVES_FACTOR`), has its validation pass split over two cores (`ingest/halves.ts`),
   * when the machine has two cores free. @default 4194304 (4 MiB); on a one-core machine, never
   */
  readonly halvesFromBytes?: number;
  /** Most records in one file. @default unlimited */
  readonly maxRecords?: number;
  /** Inputs per state (after every scheduled look) and receipt write failures. */
  readonly metrics?: DropMetrics;
}

export type { RunSummary } from './run-summary.js';

export interface DropRunner {
  /**
   * Looks at the drop once and processes every ready file. `waitForArriving`: look again until
   * nothing is arriving (still being uploaded). `waitForLeaseMs`: how long to wait for the drop's lease first.
   */
  runOnce(options?: { waitForArriving?: boolean; waitForLeaseMs?: number }): Promise<RunSummary>;
  /**
   * Tries again the inputs that `selection` picks from the drop's durable state, each from where
   * it lies (docs/file-drops.md#reprocessing). Never at the same time as a look at the drop.
   * `waitForLeaseMs`: how long to wait for the drop's lease; `onInput` hears of each input as it ends.
   */
  reprocess(
    selection?: ReprocessSelection,
    options?: { waitForLeaseMs?: number; onInput?: (input: ReprocessedInput) => void },
  ): Promise<ReprocessReport>;
  /**
   * Looks at the drop on `schedule` (job `poll:<pipeline>`, never two looks at once) and runs the
   * pipeline's reprocessing jobs (`reprocess:<pipeline>:<name>`) until `stop()`.
   */
  start(): void;
  /** Stops looking; resolves when the file in hand is settled or released. */
  stop(): Promise<void>;
  /**
   * Cuts the file in hand short (a stop whose grace time is over): once the chunks in flight
   * are confirmed, its progress is recorded and it is put back; `stop()` then resolves.
   */
  interrupt(): void;
}

export function createDropRunner(options: DropRunnerOptions): DropRunner {
  const { pipeline, store, log } = options;
  const lease = options.lease ?? OWN_LEASE;
  const workerId = (options.workerId ?? `${hostname()}-${process.pid}`).replace(/~/g, '-');
  const pipelineLog = log.child({
    pipeline: pipeline.name,
    businessId: pipeline.businessId,
    kind: pipeline.kind,
  });
  const interruption = new AbortController();
  const processFile = createFileProcessor({
    ...options,
    lease,
    workerId,
    maxJsonBytes: options.maxJsonBytes ?? 256 * 1024 * 1024,
    // On one core there is no second to split onto: not even the cut is looked for.
    halvesFromBytes:
      options.halvesFromBytes ??
      (availableParallelism() >= 2 ? 4 * 1024 * 1024 : Number.POSITIVE_INFINITY),
    signal: interruption.signal,
  });
  const files = createFileHandler({
    pipeline,
    store,
    log: pipelineLog,
    processFile,
    ...(options.metrics && { metrics: options.metrics }),
  });
  const { handle, putBack } = files;
  const census = options.metrics && createStateCensus(store);
  const housekeeping = createHousekeeping(store, pipeline, pipelineLog);
  const looks = createLooks(store, pipeline, pipelineLog);
  const names = createNameGuard({
    store,
    pipeline,
    workerId,
    environment: options.environment ?? 'production',
    log: pipelineLog,
  });
  let stopping = false;
  let running: Promise<RunSummary> | undefined;
  let reprocessing: Promise<ReprocessReport> | undefined;
  let jobs: { stop(): Promise<void> } | undefined;
  /** Looks and reprocessing take turns: on S3 (no claims) the two must never hold the same file. */
  let turn: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const mine = turn.then(work);
    turn = mine.catch(() => undefined);
    return mine;
  };

  async function runOnce({
    waitForArriving = false,
    waitForLeaseMs = 0,
  } = {}): Promise<RunSummary> {
    const summary = emptySummary();
    const count = (outcome: HandledOutcome) => countOutcome(summary, outcome);
    if (!(await lease.acquire(waitForLeaseMs))) return { ...summary, standby: true };
    if (store.atomicRename) {
      await files.putBackStranded();
      for (const stale of await takeOverStale(store, workerId, pipeline.claimLeaseMs, Date.now())) {
        pipelineLog.warn(
          { file: stale.name },
          'took over a claim whose worker did not finish within the lease',
        );
        if (!stopping) count(await handle(stale));
        else await putBack(stale, pipelineLog.child({ file: stale.name })); // stopping: no claim is left behind
      }
    }
    const { ready, arriving, done } = await looks.look({
      waitForArriving,
      stopping: () => stopping,
    });
    summary.arriving = arriving;
    summary.alreadyDone = done;
    files.keepOnly(new Set(ready.map((entry) => entry.name)));
    names.keepOnly(new Set(ready.map((entry) => entry.name)));
    for (const entry of ready) {
      if (stopping || interruption.signal.aborted || !lease.held) break;
      const unusable = await names.check(entry).catch((error: unknown) => {
        pipelineLog.warn(
          { file: JSON.stringify(entry.name.slice(0, 200)), reason: (error as Error).message },
          'could not move a file whose name cannot be used; trying again at the next look',
        );
        return 'retried' as const;
      });
      if (unusable) {
        if (unusable === 'moved') summary.rejected += 1;
        else if (unusable === 'reported') summary.unusableNames += 1;
        else summary[unusable] += 1;
        continue;
      }
      const waiting = files.waiting(entry, Date.now());
      if (waiting === 'parked') summary.parked += 1;
      if (waiting === 'backing-off') summary.backingOff += 1;
      if (waiting) continue;
      try {
        assertSafeName(entry.name);
        const held = store.atomicRename
          ? await claim(store, entry.name, workerId, Date.now())
          : { name: entry.name, current: entry.name, lost: false };
        if (!held) {
          count('skipped');
          continue;
        }
        count(await handle(held));
      } catch (error) {
        // One bad name (control characters, `..`) or one failed claim must not stop the drop.
        pipelineLog.error(
          { file: JSON.stringify(entry.name.slice(0, 200)), reason: (error as Error).message },
          'file skipped',
        );
        files.failedBeforeTry(entry, error);
        count('retried');
      }
    }
    // Housekeeping, after the files (never while stopping).
    if (!stopping) await housekeeping.sweep();
    return summary;
  }

  /** The inputs gauge; a drop that cannot be read now keeps its last figures. */
  async function countInputs(): Promise<void> {
    if (!census || !options.metrics) return;
    try {
      for (const [status, count] of Object.entries(await census.count()))
        options.metrics.setInputs(pipeline.name, status, count);
    } catch (error) {
      pipelineLog.debug(
        { reason: (error as Error).message },
        'could not count the inputs per state',
      );
    }
  }

  async function reprocess(
    selection: ReprocessSelection = {},
    {
      waitForLeaseMs = 0,
      onInput,
    }: { waitForLeaseMs?: number; onInput?: (input: ReprocessedInput) => void } = {},
  ): Promise<ReprocessReport> {
    if (!(await lease.acquire(waitForLeaseMs)))
      return { pipeline: pipeline.name, standby: true, inputs: [] };
    const selected = await selectForReprocess(
      store,
      pipeline.name,
      selection,
      pipeline.claimLeaseMs,
    );
    const deps = {
      pipeline,
      store,
      workerId,
      log: pipelineLog,
      stopping: () => stopping,
      leaseHeld: () => lease.held,
      handle,
    };
    return {
      pipeline: pipeline.name,
      standby: false,
      inputs: await reprocessSelected(deps, selected, onInput),
    };
  }

  const api: DropRunner = {
    runOnce(runOptions) {
      const mine: Promise<RunSummary> = inTurn(() => runOnce(runOptions)).finally(() => {
        if (running === mine) running = undefined;
      });
      running = mine;
      return mine;
    },
    reprocess(selection, options) {
      const mine: Promise<ReprocessReport> = inTurn(() => reprocess(selection, options)).finally(
        () => {
          if (reprocessing === mine) reprocessing = undefined;
        },
      );
      reprocessing = mine;
      return mine;
    },
    start() {
      jobs = startPipelineJobs({
        pipeline,
        store,
        log: pipelineLog,
        look: reportedLook({
          pipeline: pipeline.name,
          where: store.where,
          log: pipelineLog,
          ...(options.metrics && { metrics: options.metrics }),
          look: () => api.runOnce(),
          after: countInputs,
        }),
        reprocess: (selection) => api.reprocess(selection),
        afterReprocess: countInputs,
      });
    },
    async stop() {
      stopping = true;
      await jobs?.stop();
      await Promise.all([running?.catch(() => undefined), reprocessing?.catch(() => undefined)]);
      await lease.close();
    },
    interrupt() {
      interruption.abort();
    },
  };
  return api;
}
