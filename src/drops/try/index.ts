import { fileEnded } from './ended.js';
import { rm } from 'node:fs/promises';
import { asLocalResourceError, toProblem } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Receipt } from '../receipts.js';
import { reconnectDelay } from '../../backoff.js';
import { timeOrderedId } from '../../ids.js';
import { ClaimLost, CLAIMS_FOLDER, startHeartbeat, type Claim } from '../claims.js';
import {
  acceptedOutcome,
  createTryContext,
  lostToAnother,
  openFileTry,
  receiptFacts,
  scratchFolder,
  type FileProcessorOptions,
  type FileTry,
  type TryContext,
} from './context.js';
import { publishFile } from './publish.js';
import { giveUp, settlePublished, settleTry } from './settle.js';
import { sweepAbandoned } from '../spool.js';
import { wasPublished, type InputState } from '../state/input-state.js';
import {
  arrived,
  begin,
  deferred,
  exhausted,
  nextStep,
  rejected,
  retryScheduled,
} from '../state/machine.js';
import { isRejection, isUnavailable, RetryLater, type TryOptions } from './outcome.js';

import type { TryOutcome } from '../../vocabulary.js';

export type { FileProcessorOptions } from './context.js';

/**
 * One try of one claimed file — the story of `drops/try/`, in the order it happens:
 *
 * 1. **arrive** — the runner's file handler (`handler.ts`) hands over a claimed file; the try
 *    copies it into the spool and reads what earlier tries of the same bytes left
 *    (`context.ts`: `openFileTry`, and the states an outage kept unwritten, `owed.ts`); the
 *    state machine says what is next (`arrived`, `nextStep`).
 * 2. **begin** — the attempt is counted in the durable state before any work (`begin`), so a
 *    crash still counts it.
 * 3. **publish** — decode, validate everything, publish with confirms, the resume point after
 *    every chunk (`publish.ts`).
 * 4. **settle** — the settle plan into the state, then the receipt and the move
 *    (`settle.ts`, `settle-plan.ts`); or a scheduled retry, or giving up (`dead`).
 *
 * How a try ends is `outcome.ts`. Every change of the input's state is a pure transition of
 * state/machine.ts; what the worker remembers of a file by name only (back-off, parking) is
 * state/by-name.ts. Throws only `RetryLater` (or a store error before the file's bytes were
 * read), leaving the file to be tried again.
 */
export function createFileProcessor(
  options: FileProcessorOptions,
): (held: Claim, fileLog: Logger, tryOptions?: TryOptions) => Promise<TryOutcome> {
  const ctx = createTryContext(options);
  const { pipeline, store } = ctx;

  return async function processFile(held, log, tryOptions = {}) {
    await sweepAbandoned(ctx.spoolDirectory);
    const work = scratchFolder(ctx);
    const heartbeat = store.atomicRename
      ? startHeartbeat(store, held, ctx.workerId, heartbeatInterval(pipeline.claimLeaseMs))
      : undefined;
    const stopHeartbeat = async () => {
      await heartbeat?.stop();
    };
    const verifyHeld = async () => {
      if (!ctx.lease.held) throw new ClaimLost(held.name);
      await heartbeat?.verify();
    };
    try {
      const tr = await openFileTry(ctx, {
        held,
        log,
        work,
        stopHeartbeat,
        verifyHeld,
        trace: tryOptions.trace,
      });
      if (tr.earlier && wasPublished(tr.earlier)) return await settlePublished(ctx, tr, tr.earlier);

      const state = arrived(tr.earlier, {
        sha256: tr.spooled.sha256,
        file: held.name,
        pipeline: pipeline.name,
        // Where the file rests during the try: its own place (e.g. failed/x.csv when reprocessed without a claim), or its name.
        location: held.current.startsWith(`${CLAIMS_FOLDER}/`) ? held.name : held.current,
        at: tr.receivedAt,
      });
      const next = nextStep(tr.earlier, state, {
        maxAttempts: pipeline.retry.maxAttempts,
        now: Date.now(),
        ignoreSchedule: tryOptions.ignoreSchedule,
      });
      if (next.step === 'give-up') return await giveUp(ctx, tr, state);
      if (next.step === 'not-due')
        throw new RetryLater(
          `a retry is scheduled for ${tr.earlier?.nextAttemptAt}`,
          next.due,
          undefined,
          true,
        );
      // A rejection whose settle an outage cut short is settled again without a new attempt.
      const resettle =
        tr.earlier?.status === 'failed' &&
        tr.earlier.receiptPending === true &&
        tr.earlier.file === held.name;
      return await tryOnce(ctx, tr, state, { counted: !resettle });
    } catch (error) {
      // A full disk while the file is copied into the spool (or a receipt composed) is the worker's outage.
      if (!lostToAnother(error)) throw asLocalResourceError(error);
      // Said once, here: the other worker finishes the file; this one leaves it (and its claim) alone.
      log.warn(
        { reason: (error as Error).message },
        'file taken over by another worker: this try stops without settling',
      );
      return 'skipped';
    } finally {
      await stopHeartbeat();
      await rm(work, { recursive: true, force: true });
    }
  };
}

/**
 * One try of the file: publish it, then settle it with the receipt its end calls for. `counted`:
 * the try uses an attempt, written before any work so that a crash during it still counts it.
 */
async function tryOnce(
  ctx: TryContext,
  tr: FileTry,
  arrivedState: InputState,
  { counted }: { counted: boolean },
): Promise<TryOutcome> {
  const begun = await ctx.save(counted ? begin(arrivedState) : arrivedState);
  // A try resuming an interrupted one carries its correlation id on.
  const correlationId = begun.resume?.correlationId ?? timeOrderedId();
  const ended = await publishFile(ctx, tr, begun, correlationId);
  if (ended.end === 'lost') return 'skipped';
  if (ended.end === 'interrupted') return 'interrupted';
  let state: InputState;
  let receipt: Receipt;
  if (ended.end === 'published') {
    state = ended.state;
    receipt = {
      ...receiptFacts(ctx, tr, state.attempts),
      outcome: acceptedOutcome(ctx),
      response: { ...ended.summary, messageIds: [] },
      processedAt: state.processedAt!,
    };
  } else if (isRejection(ended.error)) {
    const rejection = rejected(ended.state, {
      reason: (ended.error as Error).message,
      at: new Date().toISOString(),
      maxAttempts: ctx.pipeline.retry.maxAttempts,
    });
    state = await ctx.save(rejection).catch((error: unknown) => {
      // The store is down: the next try here settles the rejection without a new attempt.
      if (isUnavailable(error)) ctx.owed.owe(ended.state, rejection);
      throw error;
    });
    receipt = {
      ...receiptFacts(ctx, tr, state.attempts),
      outcome: 'rejected',
      response: toProblem(ended.error, tr.held.name).problem,
      processedAt: state.processedAt!,
    };
  } else {
    return await scheduleRetry(ctx, tr, ended.state, ended.error);
  }
  if (!(await settleTry(ctx, tr, state, receipt))) return 'skipped';
  fileEnded(ctx, tr, receipt, {
    correlationId,
    recordCount: ended.end === 'published' ? ended.summary.recordCount : 0,
  });
  tr.log.info(
    { sha256: tr.spooled.sha256, outcome: receipt.outcome, attempt: state.attempts, correlationId },
    receipt.outcome === 'rejected' ? 'file rejected' : `file ${receipt.outcome}`,
  );
  return receipt.outcome === 'rejected' ? 'rejected' : receipt.outcome;
}

/**
 * A try that failed for another reason than the input. An outage (`DropUnavailable`,
 * `PublishFailed`) gives its attempt back (`deferred`); anything else keeps it
 * (`retryScheduled`), and after the last attempt the input is given up on. Throws the
 * `RetryLater` that puts the file back until the state's `nextAttemptAt`.
 */
async function scheduleRetry(
  ctx: TryContext,
  tr: FileTry,
  state: InputState,
  error: unknown,
): Promise<TryOutcome> {
  const { retry } = ctx.pipeline;
  const reason = (error as Error).message;
  const outage = isUnavailable(error);
  const failures = outage ? (state.deferrals ?? 0) + 1 : state.attempts;
  const notBefore =
    Date.now() + reconnectDelay(failures - 1, retry.initialDelayMs, retry.maxDelayMs);
  const facts = {
    reason,
    at: new Date().toISOString(),
    notBefore: new Date(notBefore).toISOString(),
  };
  const next = outage ? deferred(state, facts) : retryScheduled(state, facts);
  if (!outage && exhausted(next, retry.maxAttempts)) return await giveUp(ctx, tr, next);
  try {
    await ctx.save(next);
  } catch (stateError) {
    if (lostToAnother(stateError)) throw stateError;
    if (outage) ctx.owed.owe(state, next); // the store is down too: the next try here applies it
    tr.log.warn(
      { reason: (stateError as Error).message },
      'could not record the failed try in the drop; the back-off in memory still applies',
    );
  }
  throw new RetryLater(reason, notBefore, error);
}

/**
 * A claim is renewed four times per lease, so a worker must miss three beats in a row before
 * another may take its file over. At one beat per lease third with a 1 s floor, the shortest
 * lease (1 s) had no margin at all: a busy event loop lost a live claim, and two workers each
 * settled the same file (two receipts, found by the worker-killed fault test under load).
 */
export const heartbeatInterval = (claimLeaseMs: number) => Math.max(200, claimLeaseMs / 4);
