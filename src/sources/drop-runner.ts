import { hostname } from 'node:os';
import type { Logger } from '../log.js';
import type { Ingest } from '../pipeline/ingest.js';
import { receiptName } from '../pipeline/receipt.js';
import type { PipelineDefinition } from '../pipelines.js';
import type { OnboardingProfiles } from '../records/legacy/index.js';
import { reconnectDelay } from '../publish/rabbitmq.js';
import { claim, release, takeOverStale, type Claim } from './claims.js';
import { OWN_LEASE, type DropLease } from './lease.js';
import { createFileProcessor, RetryLater, type Outcome } from './process-file.js';
import { createReadiness } from './readiness.js';
import { assertSafeName, type DropEntry, type DropStore } from './store.js';

export interface DropRunnerOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: OnboardingProfiles;
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
  /** Most records in one file. @default unlimited */
  readonly maxRecords?: number;
}

/** What one look at the drop did. */
export interface RunSummary {
  accepted: number;
  rejected: number;
  duplicates: number;
  /** Given up on after `retry.maxAttempts` tries: settled as failed. */
  dead: number;
  /** Left in place (or put back) after a transient failure, to be tried again. */
  retried: number;
  /** Taken by another worker first. */
  skipped: number;
  /** Cut short by a stop and put back, its progress recorded: the next start publishes the rest. */
  interrupted: number;
  /** Present but not ready yet. */
  settling: number;
  /** Ready, but waiting out the back-off after a transient failure. */
  backingOff: number;
  /** Another worker holds the drop's lease: this one did not look (S3 with several workers). */
  standby: boolean;
}

export interface DropRunner {
  /**
   * Looks at the drop once and processes every ready file. `waitForSettling`: look again until
   * nothing is settling. `waitForLeaseMs`: how long to wait for the drop's lease first.
   */
  runOnce(options?: { waitForSettling?: boolean; waitForLeaseMs?: number }): Promise<RunSummary>;
  /** Looks every `schedule.pollIntervalMs` (never two looks at once) until `stop()`. */
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
  const readiness = createReadiness(pipeline);
  const pipelineLog = log.child({ pipeline: pipeline.name, businessId: pipeline.businessId, kind: pipeline.kind });
  const interruption = new AbortController();
  const processFile = createFileProcessor({ ...options, lease, workerId, maxJsonBytes: options.maxJsonBytes ?? 256 * 1024 * 1024, signal: interruption.signal });
  /** Files that failed transiently: when each may be tried again. Forgotten once it settles or leaves. */
  const backOff = new Map<string, { failures: number; notBefore: number }>();
  let stopping = false;
  let running: Promise<RunSummary> | undefined;
  let timer: NodeJS.Timeout | undefined;

  /** A kept file is done once its receipt is newer than it. */
  function unprocessed(entries: readonly DropEntry[]): DropEntry[] {
    const receipts = new Map(entries.filter((e) => e.name.endsWith('.receipt.json')).map((e) => [e.name, e.modifiedMs]));
    return entries.filter((e) => (receipts.get(receiptName(e.name)) ?? -1) < e.modifiedMs);
  }

  async function look(): Promise<{ ready: DropEntry[]; settling: number }> {
    return readiness.look(unprocessed(await store.list()), Date.now());
  }

  /** `deferred`: the input's state schedules its next try later (e.g. set by another worker, or before a restart). */
  async function handle(held: Claim): Promise<Outcome | 'deferred'> {
    const fileLog = pipelineLog.child({ file: held.name });
    let outcome: Outcome;
    try {
      outcome = await processFile(held, fileLog);
    } catch (error) {
      // The processor scheduled the retry in the input's state; an earlier failure (the file could not be read) backs off here.
      const failures = (backOff.get(held.name)?.failures ?? 0) + 1;
      const notBefore = error instanceof RetryLater ? error.notBefore : Date.now() + reconnectDelay(failures - 1, pipeline.retry.initialDelayMs, pipeline.retry.maxDelayMs);
      backOff.set(held.name, { failures, notBefore });
      if (error instanceof RetryLater && error.scheduled) {
        await putBack(held, fileLog);
        return 'deferred';
      }
      const cause = error instanceof RetryLater && error.cause !== undefined ? error.cause : error;
      fileLog.warn(
        { err: cause, reason: (cause as Error).message, failures, retryInMs: Math.max(0, notBefore - Date.now()) },
        'file not processed (transient): it stays in the drop and is tried again',
      );
      await putBack(held, fileLog);
      return 'retried';
    }
    if (outcome === 'interrupted') {
      await putBack(held, fileLog); // due again at once: a stop is no reason to back off
      return outcome;
    }
    backOff.delete(held.name);
    return outcome;
  }

  async function putBack(held: Claim, fileLog: Logger): Promise<void> {
    if (held.current === held.name) return;
    await release(store, held).catch((e: unknown) => fileLog.warn({ reason: (e as Error).message }, 'could not release the claim; the lease will free it'));
  }

  async function runOnce({ waitForSettling = false, waitForLeaseMs = 0 } = {}): Promise<RunSummary> {
    const summary: RunSummary = { accepted: 0, rejected: 0, duplicates: 0, dead: 0, retried: 0, skipped: 0, interrupted: 0, settling: 0, backingOff: 0, standby: false };
    const count = (outcome: Outcome | 'deferred') => {
      if (outcome === 'duplicate') summary.duplicates += 1;
      else if (outcome === 'deferred') summary.backingOff += 1;
      else summary[outcome] += 1;
    };
    if (!(await lease.acquire(waitForLeaseMs))) return { ...summary, standby: true };
    if (store.atomicRename) {
      for (const stale of await takeOverStale(store, workerId, pipeline.claimLeaseMs, Date.now())) {
        pipelineLog.warn({ file: stale.name }, 'took over a claim whose worker did not finish within the lease');
        if (!stopping) count(await handle(stale));
        else await putBack(stale, pipelineLog.child({ file: stale.name })); // stopping: no claim is left behind
      }
    }
    let { ready, settling } = await look();
    for (let looks = 1; waitForSettling && settling > 0 && looks <= pipeline.readiness.checks + 1 && !stopping; looks++) {
      await new Promise((resolve) => setTimeout(resolve, pipeline.readiness.intervalMs));
      ({ ready, settling } = await look());
    }
    summary.settling = settling;
    const present = new Set(ready.map((entry) => entry.name));
    for (const name of backOff.keys()) if (!present.has(name)) backOff.delete(name);
    for (const entry of ready) {
      if (stopping || interruption.signal.aborted || !lease.held) break;
      if ((backOff.get(entry.name)?.notBefore ?? 0) > Date.now()) {
        summary.backingOff += 1;
        continue;
      }
      try {
        assertSafeName(entry.name);
        const held = store.atomicRename ? await claim(store, entry.name, workerId, Date.now()) : { name: entry.name, current: entry.name, lost: false };
        if (!held) {
          count('skipped');
          continue;
        }
        count(await handle(held));
      } catch (error) {
        // One bad name (control characters, `..`) or one failed claim must not stop the drop.
        pipelineLog.error({ file: JSON.stringify(entry.name.slice(0, 200)), reason: (error as Error).message }, 'file skipped');
        count('retried');
      }
    }
    return summary;
  }

  return {
    runOnce(runOptions) {
      running = runOnce(runOptions).finally(() => (running = undefined));
      return running;
    },
    start() {
      const tick = () => {
        if (stopping) return;
        running = runOnce()
          .catch((error: unknown) => {
            pipelineLog.error({ reason: (error as Error).message }, `could not read the drop at ${store.where}; trying again in ${pipeline.schedule.pollIntervalMs} ms`);
            return undefined as unknown as RunSummary;
          })
          .finally(() => {
            running = undefined;
            if (!stopping) timer = setTimeout(tick, pipeline.schedule.pollIntervalMs);
          });
      };
      tick();
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
      await lease.close();
    },
    interrupt() {
      interruption.abort();
    },
  };
}
