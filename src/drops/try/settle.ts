import { GaveUp, toProblem } from '../../errors.js';
import type { Receipt } from '../receipts.js';
import { acceptedOutcome, lost, receiptFacts, type FileTry, type TryContext } from './context.js';
import { listPublishedBefore } from './published-before.js';
import { planSettle, settle } from './settle-plan.js';
import { spool } from '../spool.js';
import { fileEnded } from './ended.js';
import type { InputState } from '../state/input-state.js';
import { dead, duplicateReceipted, settled, settling } from '../state/machine.js';
import { idsName } from '../state/persist.js';
import type { TryOutcome } from '../../vocabulary.js';

/**
 * The last step of a try: the settle plan goes into the state, then the receipt and the move
 * (settle.ts), then the state with where they went. `ids`: the id list the receipt carries
 * (accepted inputs: this try's by default; a dead one: what earlier tries published, if any).
 * False: another worker took the file over and settles it.
 */
export async function settleTry(
  ctx: TryContext,
  tr: FileTry,
  state: InputState,
  receipt: Receipt,
  ids?: string,
): Promise<boolean> {
  await tr.stopHeartbeat();
  if (lost(ctx, tr.held)) return false;
  const success = receipt.outcome === 'accepted' || receipt.outcome === 'validated';
  const { sha256 } = tr.spooled;
  const plan = await planSettle(ctx, tr.held, sha256, success, tr.unfinishedSettle);
  const planned = await ctx.save(settling(state, plan));
  const written = await settle(ctx, tr.held, sha256, receipt, plan, {
    receipt: tr.local.receipt,
    ids: success ? (ids ?? tr.local.ids) : ids,
    input: tr.spooled.path,
  });
  await ctx.save(settled(planned, written));
  return true;
}

/**
 * No more tries: the state `dead` (terminal) and a failure receipt that says why. When earlier
 * tries got part of the file confirmed (its resume point), the receipt's problem says how many
 * records went (`publishedRecords`) and lists their ids (`messageIds`): they are in the queue.
 */
export async function giveUp(ctx: TryContext, tr: FileTry, state: InputState): Promise<TryOutcome> {
  const { maxAttempts } = ctx.pipeline.retry;
  const published = state.resume?.confirmed ?? 0;
  const deadState = await ctx.save(dead(state));
  const listed = await listPublishedBefore(ctx, tr, deadState);
  const went =
    published === 0
      ? ''
      : `. The first ${published} record(s) were published by earlier tries${listed === undefined ? ' (their ids could not be derived again)' : ' (their ids are in messageIds)'}; the rest were not`;
  const reason = `Gave up after ${state.attempts} tries (retry.maxAttempts is ${maxAttempts}); the last one: ${state.lastError ?? 'unknown'}${went}`;
  const problem = toProblem(new GaveUp({ detail: reason }), tr.held.name).problem;
  const receipt: Receipt = {
    ...receiptFacts(ctx, tr, deadState.attempts),
    outcome: 'dead',
    response: published > 0 ? { ...problem, publishedRecords: published, messageIds: [] } : problem,
    processedAt: new Date().toISOString(),
  };
  const ids = listed === undefined ? undefined : tr.local.ids;
  if (!(await settleTry(ctx, tr, deadState, receipt, ids))) return 'skipped';
  fileEnded(ctx, tr, receipt, {
    correlationId: state.resume?.correlationId,
    recordCount: published,
  });
  tr.log.error(
    { sha256: tr.spooled.sha256, attempts: deadState.attempts, reason: deadState.lastError },
    'file given up on: settled as failed, not tried again on its own',
  );
  return 'dead';
}

/**
 * Bytes that were published before are never published again: a copy under another name (or
 * after its receipt) gets a `duplicate` receipt; the same file whose settle a crash cut short
 * gets its `accepted` receipt completed.
 */
export async function settlePublished(
  ctx: TryContext,
  tr: FileTry,
  earlier: InputState,
): Promise<TryOutcome> {
  const copy = earlier.file !== tr.held.name || earlier.status === 'receipted';
  const response = { ...earlier.response!, messageIds: [] };
  const facts = receiptFacts(ctx, tr, earlier.attempts + 1);
  const receipt: Receipt = copy
    ? {
        ...facts,
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
        ...facts,
        outcome: acceptedOutcome(ctx),
        response,
        processedAt: earlier.processedAt ?? new Date().toISOString(),
      };
  const ids = (await spool(ctx.store, idsName(tr.spooled.sha256), tr.work)).path;
  if (copy) {
    // The accepted input's state stays as it was, but for the note of where the copy's receipt is.
    await tr.stopHeartbeat();
    if (lost(ctx, tr.held)) return 'skipped';
    const { sha256 } = tr.spooled;
    const plan = await planSettle(ctx, tr.held, sha256, true);
    const written = await settle(ctx, tr.held, sha256, receipt, plan, {
      receipt: tr.local.receipt,
      ids,
      input: tr.spooled.path,
    });
    await ctx.save(duplicateReceipted(earlier, written.receipt));
  } else if (!(await settleTry(ctx, tr, earlier, receipt, ids))) {
    return 'skipped';
  }
  // A duplicate is a batch of its own (nothing published); a completed receipt is the
  // accepted batch its records were confirmed under.
  fileEnded(ctx, tr, receipt, {
    correlationId: copy ? undefined : earlier.resume?.correlationId,
    recordCount: copy ? 0 : (earlier.response?.recordCount ?? 0),
  });
  tr.log.info(
    { sha256: tr.spooled.sha256, outcome: receipt.outcome },
    copy ? 'duplicate of an accepted file: not published again' : 'receipt completed',
  );
  return copy ? 'duplicate' : 'accepted';
}
