import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { decodeFile } from '../decode/file.js';
import { GaveUp, Interrupted, toProblem } from '../errors.js';
import type { Logger } from '../log.js';
import type { DropMetrics } from '../metrics.js';
import { reconnectDelay } from '../publish/rabbitmq.js';
import type { Ingest } from '../pipeline/batch.js';
import type { Receipt } from '../pipeline/receipt.js';
import type { PipelineDefinition } from './definition.js';
import { KINDS } from '../records/index.js';
import { LEGACY, profileFor, type OnboardingProfiles } from '../records/legacy/index.js';
import { CLAIMS_FOLDER, startHeartbeat, type Claim } from './claims.js';
import {
  idsName,
  published,
  readState,
  unfinished,
  withFailure,
  writeState,
  type InputFailure,
  type InputState,
} from './state/input-state.js';
import { lineageName, openLineageFile, type LineageFile } from '../lineage/drop-file.js';
import type { DropLease } from './lease.js';
import { openIdFile, type IdFile } from './receipts.js';
import { restoreLines } from './restore-lines.js';
import { planSettle, settle } from './settle.js';
import { spool, sweepAbandoned, SPOOL_OWNER } from './spool.js';
import type { DropStore } from './stores/store.js';
import {
  isRejection,
  isUnavailable,
  RetryLater,
  type Outcome,
  type TryOptions,
} from './try-outcome.js';

export interface FileProcessorOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: OnboardingProfiles;
  readonly log: Logger;
  readonly lease: DropLease;
  readonly workerId: string;
  /** Local folder for copies of files being processed. */
  readonly spoolDirectory: string;
  readonly maxJsonBytes: number;
  readonly maxRecords?: number;
  readonly metrics?: Pick<DropMetrics, 'receiptWriteFailed'>;
  /**
   * Aborted when the worker stops and its grace time is over: the file in hand is interrupted at
   * the next safe point (see `StreamBatch.signal`), its progress kept, and it is given back.
   * @default never
   */
  readonly signal?: AbortSignal;
}

/**
 * One claimed file, start to end: spool it (hashing), look up what its bytes did before, decode,
 * ingest (validate everything, then publish with confirms), record the state at every step,
 * settle. Throws only `RetryLater` (or a store error before the file's bytes were read),
 * leaving the file to be tried again.
 */
export function createFileProcessor(
  options: FileProcessorOptions,
): (held: Claim, fileLog: Logger, how?: TryOptions) => Promise<Outcome> {
  const { pipeline, store, ingest, lease, workerId } = options;
  const kind = KINDS[pipeline.kind];
  const source = `${store.type}:${store.where}`;
  const { maxAttempts } = pipeline.retry;
  /** The claim went to another worker (missed heartbeat), or the drop's lease did: stop before any effect. */
  const lost = (held: Claim) => held.lost || !lease.held;
  const save = (state: InputState) => writeState(store, { ...state, worker: workerId });
  const receiptsWith = (state: InputState, written: string) => [
    ...(state.receipts ?? (state.receipt ? [state.receipt] : [])),
    written,
  ];

  return async function processFile(held, fileLog, how = {}) {
    const receivedAt = new Date().toISOString();
    await sweepAbandoned(options.spoolDirectory);
    const work = path.join(options.spoolDirectory, `${SPOOL_OWNER}${randomUUID()}`);
    const local = {
      receipt: path.join(work, 'receipt.json'),
      ids: path.join(work, 'message-ids'),
      lineage: path.join(work, 'lineage'),
    };
    const heartbeat = store.atomicRename
      ? startHeartbeat(store, held, workerId, Math.max(1000, pipeline.claimLeaseMs / 3))
      : undefined;
    try {
      await mkdir(work, { recursive: true });
      const spooled = await spool(store, held.current, work);
      const file = { name: held.name, size: spooled.size, sha256: spooled.sha256, source };
      const earlier = await readState(store, spooled.sha256);

      /** A settle of this same file that a crash cut short: carried out again (one receipt, not two). */
      const unfinishedSettle = earlier?.file === held.name ? earlier.settling : undefined;

      /**
       * Settles the file with `receipt`: the plan goes into the state (`before`, as it is now),
       * then the receipt and the move, then the state `after` with where they went.
       */
      const settleWith = async (
        receipt: Receipt,
        before: InputState,
        after: InputState,
        success: boolean,
        ids = local.ids,
      ) => {
        await heartbeat?.stop();
        if (lost(held)) return false; // another worker took the file over and settles it
        const plan = await planSettle(options, held, success, unfinishedSettle);
        await save({ ...before, settling: plan });
        const written = await settle(options, held, receipt, plan, {
          receipt: local.receipt,
          ids: success ? ids : undefined,
        });
        await save({
          ...after,
          settling: undefined,
          receipt: written.receipt,
          receipts: receiptsWith(after, written.receipt),
          location: written.location,
        });
        return true;
      };

      if (earlier && published(earlier)) {
        // These bytes were accepted before: never published twice.
        const again = earlier.file !== held.name || earlier.status === 'receipted';
        const base = {
          pipeline: pipeline.name,
          businessId: pipeline.businessId,
          kind: pipeline.kind,
          format: pipeline.format,
          file,
          receivedAt,
          attempt: earlier.attempts + 1,
        };
        const response = { ...earlier.response!, messageIds: [] };
        const receipt: Receipt = again
          ? {
              ...base,
              outcome: 'duplicate',
              response,
              processedAt: new Date().toISOString(),
              duplicateOf: {
                file: earlier.file,
                processedAt: earlier.processedAt ?? '',
                receipt: earlier.receipt ?? '',
              },
            }
          : {
              ...base,
              outcome: 'accepted',
              response,
              processedAt: earlier.processedAt ?? new Date().toISOString(),
            };
        const ids = (await spool(store, idsName(spooled.sha256), work)).path;
        if (again) {
          // A duplicate leaves the accepted input's state as it was, but for the note of where the copy's receipt is.
          await heartbeat?.stop();
          if (lost(held)) return 'skipped';
          const written = await settle(
            options,
            held,
            receipt,
            await planSettle(options, held, true),
            { receipt: local.receipt, ids },
          );
          await save({ ...earlier, receipts: receiptsWith(earlier, written.receipt) });
        } else if (
          !(await settleWith(receipt, earlier, { ...earlier, status: 'receipted' }, true, ids))
        ) {
          return 'skipped';
        }
        fileLog.info(
          { sha256: spooled.sha256, outcome: receipt.outcome },
          again ? 'duplicate of an accepted file: not published again' : 'receipt completed',
        );
        return again ? 'duplicate' : 'accepted';
      }

      let state: InputState = {
        ...earlier,
        sha256: spooled.sha256,
        status: 'received',
        file: held.name,
        pipeline: pipeline.name,
        // Where the file rests during the try: its own place (e.g. failed/x.csv when reprocessed without a claim), or its name.
        location: held.current.startsWith(`${CLAIMS_FOLDER}/`) ? held.name : held.current,
        attempts: earlier?.attempts ?? 0,
        receivedAt: earlier?.receivedAt ?? receivedAt,
        nextAttemptAt: undefined,
      };
      if (earlier && unfinished(earlier)) {
        state = withFailure(state, {
          attempt: earlier.attempts,
          kind: 'unfinished',
          reason: 'the try did not finish: the worker stopped or crashed while working on it',
        });
      }
      const base = () => ({
        pipeline: pipeline.name,
        businessId: pipeline.businessId,
        kind: pipeline.kind,
        format: pipeline.format,
        file,
        receivedAt,
        attempt: state.attempts,
      });

      /** No more tries: a failure receipt that says why, and the state `dead` (terminal). */
      const giveUp = async (): Promise<Outcome> => {
        const reason = `Gave up after ${state.attempts} tries (retry.maxAttempts is ${maxAttempts}); the last one: ${state.lastError ?? 'unknown'}`;
        const problem = toProblem(new GaveUp({ detail: reason }), held.name).problem;
        state = { ...state, status: 'dead', nextAttemptAt: undefined };
        await save(state);
        if (
          !(await settleWith(
            {
              ...base(),
              outcome: 'dead',
              response: problem,
              processedAt: new Date().toISOString(),
            },
            state,
            state,
            false,
          ))
        )
          return 'skipped';
        fileLog.error(
          { sha256: spooled.sha256, attempts: state.attempts, reason: state.lastError },
          'file given up on: settled as failed, not tried again on its own',
        );
        return 'dead';
      };

      if (earlier?.status === 'dead' || state.attempts >= maxAttempts) return await giveUp();
      const due =
        earlier?.status === 'retry-scheduled' && earlier.nextAttemptAt
          ? Date.parse(earlier.nextAttemptAt)
          : 0;
      if (due > Date.now() && !how.ignoreSchedule)
        throw new RetryLater(
          `a retry is scheduled for ${earlier!.nextAttemptAt}`,
          due,
          undefined,
          true,
        );

      state = { ...state, attempts: state.attempts + 1 };
      await save(state); // before any work: a crash during this try still counts it
      // A try resuming an interrupted one carries its correlation id on.
      const correlationId = state.resume?.correlationId ?? randomUUID();
      let resumeAfter = 0;
      let idFile: IdFile | undefined;
      let lineage: LineageFile | undefined;
      let receipt: Receipt;
      try {
        const records = await decodeFile(spooled.path, {
          kind,
          format: pipeline.format,
          businessId: pipeline.businessId,
          context: {
            defaults: profileFor(options.onboarding, pipeline.businessId, kind.name),
            receivedAt,
          },
          maxJsonBytes: options.maxJsonBytes,
        });
        if (lost(held)) return 'skipped';
        if (state.resume && records.mode === 'stream')
          resumeAfter = await earlierIds(state.resume.confirmed);
        idFile = openIdFile(local.ids, { append: resumeAfter > 0 });
        const sink = idFile;
        const appendLineage = resumeAfter > 0 && (await earlierLineage(resumeAfter));
        lineage = openLineageFile(
          local.lineage,
          {
            pipeline: pipeline.name,
            businessId: pipeline.businessId,
            kind: kind.name,
            file: held.name,
            sha256: spooled.sha256,
          },
          { append: appendLineage },
        );
        const lineageSink = lineage;
        const body =
          records.mode === 'stream'
            ? {
                ...records,
                onConfirmed: (ids: readonly string[]) => sink.append(ids),
                signal: options.signal,
                resumeAfter,
              }
            : records;
        const response = await ingest({
          kind,
          businessId: pipeline.businessId,
          ...body,
          onValidated: async () => {
            state = { ...state, status: 'validated' };
            await save(state);
          },
          onLineage: (confirmed) => lineageSink.append(confirmed),
          correlationId,
          source: { type: store.type, name: pipeline.name },
          log: fileLog.child({ correlationId }),
          maxRecords: options.maxRecords,
          volatilePaths: pipeline.format === 'v2-json' ? [] : LEGACY[kind.name]?.receiptTimePaths,
        });
        await idFile.append(response.messageIds); // array batches return theirs; streamed ones went to the sink
        await idFile.end();
        await lineage.end();
        const processedAt = new Date().toISOString();
        const { messageIds: _inFile, ...summary } = response;
        // Ids, then the state: from here on these bytes are never published again.
        await store.write(idsName(spooled.sha256), { file: local.ids });
        await store.write(lineageName(spooled.sha256), { file: local.lineage });
        state = {
          ...state,
          status: 'published',
          response: summary,
          processedAt,
          deferrals: 0,
          resume: undefined,
        };
        await save(state);
        receipt = {
          ...base(),
          outcome: 'accepted',
          response: { ...summary, messageIds: [] },
          processedAt,
        };
      } catch (error) {
        if (error instanceof Interrupted) return await interrupted(error.confirmed);
        idFile?.abandon();
        lineage?.abandon();
        if (!isRejection(error)) {
          const retry = await scheduleRetry(error);
          if (retry) throw retry;
          return await giveUp(); // that was the last try
        }
        state = withFailure(
          { ...state, status: 'failed', processedAt: new Date().toISOString(), resume: undefined },
          { attempt: state.attempts, kind: 'rejected', reason: (error as Error).message },
        );
        if (state.attempts >= maxAttempts) state = { ...state, status: 'dead' };
        receipt = {
          ...base(),
          outcome: 'rejected',
          response: toProblem(error, held.name).problem,
          processedAt: state.processedAt!,
        };
        await save(state);
      }
      const accepted = receipt.outcome === 'accepted';
      if (
        !(await settleWith(
          receipt,
          state,
          accepted ? { ...state, status: 'receipted' } : state,
          accepted,
        ))
      )
        return 'skipped';
      fileLog.info(
        {
          sha256: spooled.sha256,
          outcome: receipt.outcome,
          attempt: state.attempts,
          correlationId,
        },
        accepted ? 'file accepted' : 'file rejected',
      );
      return accepted ? 'accepted' : 'rejected';

      /**
       * The ids an interrupted try had confirmed, from the drop into the local id list, which this
       * try appends to. Returns how many records to skip: 0 (publish everything again, same ids)
       * when the list holds fewer than `confirmed`.
       */
      async function earlierIds(confirmed: number): Promise<number> {
        if (!(await restoreLines(store, idsName(spooled.sha256), work, local.ids, confirmed))) {
          fileLog.warn(
            { confirmed },
            'the ids of the interrupted try are missing or incomplete: publishing the whole file again (same ids)',
          );
          return 0;
        }
        fileLog.info(
          { confirmed },
          'resuming an interrupted try: its confirmed records are not published again',
        );
        return confirmed;
      }

      /**
       * The lineage of the interrupted try's confirmed records (its header, then a line a record),
       * which this try appends to. False (the lineage then starts at the resumed records; said in
       * the log) when it is missing or shorter: lineage is not worth publishing again for.
       */
      async function earlierLineage(confirmed: number): Promise<boolean> {
        if (
          await restoreLines(store, lineageName(spooled.sha256), work, local.lineage, confirmed + 1)
        )
          return true;
        fileLog.warn(
          { confirmed },
          'the lineage of the interrupted try is missing or incomplete: the lineage of this file starts at the resumed records',
        );
        return false;
      }

      /**
       * The worker is stopping: the ids of what the broker confirmed, then the state that points at
       * them; the attempt is given back (a stop is nobody's fault) and the file is due again at once.
       * No receipt. If the drop cannot be written now, the next try counts this one as unfinished
       * and publishes from the last recorded point again, under the same ids.
       */
      async function interrupted(confirmed: number): Promise<Outcome> {
        const reason = `interrupted by a stop of the worker after ${confirmed} confirmed record(s)`;
        if (lost(held)) return 'skipped'; // another worker has the file (and its state) now
        try {
          await idFile?.end();
          await lineage?.end();
          if (confirmed > resumeAfter) {
            await store.write(idsName(spooled.sha256), { file: local.ids });
            await store.write(lineageName(spooled.sha256), { file: local.lineage });
          }
          const resume = confirmed > 0 ? { confirmed, correlationId } : undefined;
          state = withFailure(
            {
              ...state,
              status: 'retry-scheduled',
              attempts: state.attempts - 1,
              nextAttemptAt: new Date().toISOString(),
              resume,
            },
            { attempt: state.attempts, kind: 'interrupted', reason },
          );
          await save(state);
          fileLog.info(
            { sha256: spooled.sha256, confirmed, correlationId },
            'file interrupted by the stop: progress recorded, the file goes back; the next start publishes the rest',
          );
        } catch (stateError) {
          fileLog.warn(
            { reason: (stateError as Error).message, confirmed },
            'file interrupted by the stop, but its progress could not be recorded in the drop: the next try starts from the last recorded point (same ids)',
          );
        }
        return 'interrupted';
      }

      /**
       * A try that failed for another reason than the input: the state says when to try again.
       * An outage does not use an attempt; an unexpected error does. Undefined: that was the last try.
       */
      async function scheduleRetry(error: unknown): Promise<RetryLater | undefined> {
        const reason = (error as Error).message;
        const outage = isUnavailable(error);
        const failure: Omit<InputFailure, 'at'> = {
          attempt: state.attempts,
          kind: outage ? 'unavailable' : 'error',
          reason,
        };
        const deferrals = outage ? (state.deferrals ?? 0) + 1 : 0;
        const notBefore =
          Date.now() +
          reconnectDelay(
            (outage ? deferrals : state.attempts) - 1,
            pipeline.retry.initialDelayMs,
            pipeline.retry.maxDelayMs,
          );
        state = withFailure(
          {
            ...state,
            status: 'retry-scheduled',
            attempts: outage ? state.attempts - 1 : state.attempts,
            deferrals,
            nextAttemptAt: new Date(notBefore).toISOString(),
          },
          failure,
        );
        if (!outage && state.attempts >= maxAttempts) return undefined;
        await save(state).catch((stateError: unknown) => {
          fileLog.warn(
            { reason: (stateError as Error).message },
            'could not record the failed try in the drop; the back-off in memory still applies',
          );
        });
        return new RetryLater(reason, notBefore, error);
      }
    } finally {
      await heartbeat?.stop();
      await rm(work, { recursive: true, force: true });
    }
  };
}
