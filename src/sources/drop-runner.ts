import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { decodeFile } from '../decode/file.js';
import { isIngestError, toProblem } from '../errors.js';
import type { Logger } from '../log.js';
import type { BulkResponse, Ingest } from '../pipeline/ingest.js';
import { receiptName, serializeReceipt, type Receipt } from '../pipeline/receipt.js';
import type { PipelineDefinition } from '../pipelines.js';
import { KINDS } from '../records/index.js';
import { LEGACY, profileFor, type OnboardingProfiles } from '../records/legacy/index.js';
import { claim, release, renew, takeOverStale, type Claim } from './claims.js';
import { readState, writeState } from './drop-state.js';
import { createReadiness } from './readiness.js';
import { spool, type Spooled } from './spool.js';
import { assertSafeName, type DropEntry, type DropStore } from './store.js';

export interface DropRunnerOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: OnboardingProfiles;
  readonly log: Logger;
  /** Local folder for copies of files being processed. */
  readonly spoolDirectory: string;
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
  /** Left in place (or put back) after a transient failure, to be tried again. */
  retried: number;
  /** Taken by another worker first. */
  skipped: number;
  /** Present but not ready yet. */
  settling: number;
}

export interface DropRunner {
  /** Looks at the drop once and processes every ready file. `waitForSettling`: look again until nothing is settling. */
  runOnce(options?: { waitForSettling?: boolean }): Promise<RunSummary>;
  /** Looks every `schedule.pollIntervalMs` (never two looks at once) until `stop()`. */
  start(): void;
  /** Stops looking; resolves when the file in hand is settled or released. */
  stop(): Promise<void>;
}

type Outcome = 'accepted' | 'rejected' | 'duplicate' | 'retried' | 'skipped';

/** Rejections are the input's fault (4xx): the file fails. Anything else may pass: it is retried. */
const isRejection = (error: unknown) => isIngestError(error) && error.status >= 400 && error.status < 500;

export function createDropRunner(options: DropRunnerOptions): DropRunner {
  const { pipeline, store, ingest, log } = options;
  const workerId = (options.workerId ?? `${hostname()}-${process.pid}`).replace(/~/g, '-');
  const readiness = createReadiness(pipeline);
  const kind = KINDS[pipeline.kind];
  const pipelineLog = log.child({ pipeline: pipeline.name, businessId: pipeline.businessId, kind: pipeline.kind });
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

  async function finalPlace(name: string, success: boolean): Promise<string | undefined> {
    const action = success ? pipeline.after.success : pipeline.after.failure;
    if (action !== 'move') return undefined;
    const folder = success ? pipeline.after.processedFolder : pipeline.after.failedFolder;
    const target = `${folder}/${name}`;
    return (await store.stat(target)) ? `${folder}/${new Date().toISOString().replace(/[:.]/g, '-')}-${name}` : target;
  }

  /**
   * Receipt first, then the input to its final place: a crash in between only repeats the
   * receipt. Returns the receipt's name.
   */
  async function settle(held: Claim, receipt: Receipt, success: boolean): Promise<string> {
    const moveTo = await finalPlace(held.name, success);
    const action = success ? pipeline.after.success : pipeline.after.failure;
    const written = receiptName(moveTo ?? held.name);
    await store.write(written, serializeReceipt(receipt));
    if (moveTo) {
      if (!(await store.rename(held.current, moveTo))) throw new Error(`could not move ${held.current} to ${moveTo}`);
    } else if (action === 'delete') {
      await store.remove(held.current);
    } else if (held.current !== held.name && !(await store.rename(held.current, held.name))) {
      throw new Error(`could not put ${held.current} back as ${held.name}`);
    }
    if (pipeline.readiness.strategy === 'marker') await store.remove(`${held.name}${pipeline.readiness.markerSuffix}`);
    return written;
  }

  async function processFile(held: Claim): Promise<Outcome> {
    const fileLog = pipelineLog.child({ file: held.name });
    const receivedAt = new Date().toISOString();
    let spooled: Spooled | undefined;
    let renewing: Promise<void> = Promise.resolve();
    const heartbeat = store.atomicRename
      ? setInterval(() => (renewing = renew(store, held, workerId, Date.now()).catch(() => undefined)), Math.max(1000, pipeline.claimLeaseMs / 3))
      : undefined;
    // Before the claim is settled or released: a renewal renaming the claim at the same time
    // made that rename fail (the file went back into the drop while its receipt was in processed/).
    const stopRenewing = async () => {
      clearInterval(heartbeat);
      await renewing;
    };
    try {
      spooled = await spool(store, held.current, options.spoolDirectory);
      const facts = { name: held.name, size: spooled.size, sha256: spooled.sha256, source: `${store.type}:${store.where}` };
      const earlier = await readState(store, spooled.sha256);
      const attempt = (earlier?.attempts ?? 0) + 1;
      const base = { pipeline: pipeline.name, businessId: pipeline.businessId, kind: pipeline.kind, format: pipeline.format, file: facts, receivedAt, attempt };

      if (earlier && earlier.status !== 'failed' && earlier.response) {
        // These bytes were accepted before: never published twice.
        const again = earlier.file !== held.name || earlier.status === 'receipted';
        const receipt: Receipt = again
          ? { ...base, outcome: 'duplicate', response: earlier.response, processedAt: new Date().toISOString(), duplicateOf: { file: earlier.file, processedAt: earlier.processedAt ?? '', receipt: earlier.receipt ?? '' } }
          : { ...base, outcome: 'accepted', response: earlier.response, processedAt: earlier.processedAt ?? new Date().toISOString() };
        await stopRenewing();
        if (held.lost) return 'skipped';
        const written = await settle(held, receipt, true);
        if (!again) await writeState(store, { ...earlier, status: 'receipted', receipt: written });
        fileLog.info({ sha256: spooled.sha256, outcome: receipt.outcome }, again ? 'duplicate of an accepted file: not published again' : 'receipt completed');
        return again ? 'duplicate' : 'accepted';
      }

      const correlationId = randomUUID();
      let receipt: Receipt;
      try {
        const records = await decodeFile(spooled.path, {
          kind,
          format: pipeline.format,
          businessId: pipeline.businessId,
          context: { defaults: profileFor(options.onboarding, pipeline.businessId, kind.name), receivedAt },
          maxJsonBytes: options.maxJsonBytes ?? 256 * 1024 * 1024,
        });
        const response = await ingest({
          kind,
          businessId: pipeline.businessId,
          ...records,
          correlationId,
          source: { type: store.type, name: pipeline.name },
          log: fileLog.child({ correlationId }),
          maxRecords: options.maxRecords,
          volatilePaths: pipeline.format === 'v2-json' ? [] : LEGACY[kind.name]?.receiptTimePaths,
        });
        const processedAt = new Date().toISOString();
        // Recorded before the receipt: from here on these bytes are never published again.
        await writeState(store, { sha256: spooled.sha256, status: 'published', file: held.name, attempts: attempt, response, processedAt });
        receipt = { ...base, outcome: 'accepted', response, processedAt };
      } catch (error) {
        if (!isRejection(error)) throw error;
        receipt = { ...base, outcome: 'rejected', response: toProblem(error, held.name).problem, processedAt: new Date().toISOString() };
        await writeState(store, { sha256: spooled.sha256, status: 'failed', file: held.name, attempts: attempt, lastError: (error as Error).message });
      }
      await stopRenewing();
      if (held.lost) return 'skipped'; // another worker took the claim over and settles the file
      const accepted = receipt.outcome === 'accepted';
      const written = await settle(held, receipt, accepted);
      if (accepted) {
        const response = receipt.response as BulkResponse;
        await writeState(store, { sha256: spooled.sha256, status: 'receipted', file: held.name, attempts: attempt, response, receipt: written, processedAt: receipt.processedAt });
      }
      fileLog.info({ sha256: spooled.sha256, outcome: receipt.outcome, attempt, correlationId }, accepted ? 'file accepted' : 'file rejected');
      return accepted ? 'accepted' : 'rejected';
    } catch (error) {
      fileLog.warn({ err: error, reason: (error as Error).message }, 'file not processed (transient): it stays in the drop and is tried again');
      await stopRenewing();
      if (held.current !== held.name) await release(store, held).catch((e: unknown) => fileLog.warn({ reason: (e as Error).message }, 'could not release the claim; the lease will free it'));
      return 'retried';
    } finally {
      clearInterval(heartbeat);
      await spooled?.remove();
    }
  }

  async function runOnce({ waitForSettling = false } = {}): Promise<RunSummary> {
    const summary: RunSummary = { accepted: 0, rejected: 0, duplicates: 0, retried: 0, skipped: 0, settling: 0 };
    const count = (outcome: Outcome) => {
      if (outcome === 'duplicate') summary.duplicates += 1;
      else summary[outcome] += 1;
    };
    if (store.atomicRename) {
      for (const stale of await takeOverStale(store, workerId, pipeline.claimLeaseMs, Date.now())) {
        pipelineLog.warn({ file: stale.name }, 'took over a claim whose worker did not finish within the lease');
        if (!stopping) count(await processFile(stale));
      }
    }
    let { ready, settling } = await look();
    for (let looks = 1; waitForSettling && settling > 0 && looks <= pipeline.readiness.checks + 1 && !stopping; looks++) {
      await new Promise((resolve) => setTimeout(resolve, pipeline.readiness.intervalMs));
      ({ ready, settling } = await look());
    }
    summary.settling = settling;
    for (const entry of ready) {
      if (stopping) break;
      try {
        assertSafeName(entry.name);
        const held = store.atomicRename ? await claim(store, entry.name, workerId, Date.now()) : { name: entry.name, current: entry.name, lost: false };
        if (!held) {
          count('skipped');
          continue;
        }
        count(await processFile(held));
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
    },
  };
}
