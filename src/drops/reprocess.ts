import type { Logger } from '../log.js';
import type { PipelineDefinition } from './definition.js';
import { claim, CLAIMS_FOLDER, parseClaim, type Claim } from './claims.js';
import { unfinished, type InputState, type ReprocessStatus } from './state/input-state.js';
import { listStates, readState } from './state/persist.js';

export { REPROCESS_STATUSES, type ReprocessStatus } from './state/input-state.js';
import type { TryOptions } from './try/outcome.js';
import type { HandledOutcome, ReprocessOutcome } from '../vocabulary.js';
import { assertSafeName, type DropStore } from '../stores/store.js';

/**
 * Reprocessing: trying again inputs that failed, typically after a business fixed its master
 * data or onboarding profile. Inputs are chosen from the drop's durable state (never by scanning
 * folders), and each is tried from where it lies now (`location`, e.g. `failed/x.csv`) through
 * the drop runner's own processing: same claim or lease, same `processFile`, same receipts.
 * Every try counts an attempt, so an input that keeps failing goes dead after `retry.maxAttempts`;
 * dead inputs are never selected. Earlier receipts stay where they are; the new one says `attempt`.
 */

export interface ReprocessSelection {
  /** @default ['failed'] */
  readonly statuses?: readonly ReprocessStatus[];
  /** Only inputs processed at or after this time (ms since the epoch; last change when never processed). @default all */
  readonly since?: number;
  /** Only the input with this content hash (the portal's Reprocess button). @default any */
  readonly sha256?: string;
}

/** One selected input: as selected, and what the try did. */
export interface ReprocessedInput {
  readonly file: string;
  readonly sha256: string;
  /** Where it was when selected. */
  readonly location: string | undefined;
  readonly status: InputState['status'];
  readonly attempts: number;
  readonly lastError: string | undefined;
  outcome?: ReprocessOutcome;
  /** The attempt this try was (the new receipt's `attempt`). */
  attempt?: number;
  /** Why it did not succeed. */
  reason?: string;
}

export interface ReprocessReport {
  readonly pipeline: string;
  /** Another worker holds the drop's lease (S3): nothing was tried here. */
  readonly standby: boolean;
  readonly inputs: ReprocessedInput[];
}

const processedTime = (state: InputState) =>
  Date.parse(state.processedAt ?? state.updatedAt ?? '') || 0;

/** The inputs of `pipeline` that match `selection`, oldest first. Dead inputs never match (no status selects them). */
export async function selectForReprocess(
  store: DropStore,
  pipeline: string,
  selection: ReprocessSelection = {},
  unfinishedAfterMs = Infinity,
): Promise<ReprocessedInput[]> {
  const statuses: readonly string[] = selection.statuses ?? ['failed'];
  const since = selection.since ?? 0;
  // The modification time of a state file is never older than its last change: a cheap first filter.
  const states = await listStates(store, { since });
  /**
   * A try cut short away from the drop's top level (a reprocess from failed/ on S3, whose worker
   * died): neither the poller nor a claim takeover will see it, so it is selected with the rest
   * once it has not changed for `unfinishedAfterMs` (the claim lease). A try at the top level or
   * in a claim is left to the poller and the takeover.
   */
  const stranded = (s: InputState) =>
    unfinished(s) &&
    s.location !== undefined &&
    s.location !== s.file &&
    !s.location.startsWith(`${CLAIMS_FOLDER}/`) &&
    Date.now() - Date.parse(s.updatedAt ?? '') >= unfinishedAfterMs;
  return states
    .filter(
      (s) =>
        (statuses.includes(s.status) || stranded(s)) &&
        (s.pipeline === undefined || s.pipeline === pipeline) &&
        (selection.sha256 === undefined || s.sha256 === selection.sha256) &&
        processedTime(s) >= since,
    )
    .sort((a, b) => processedTime(a) - processedTime(b) || a.file.localeCompare(b.file))
    .map((s) => ({
      file: s.file,
      sha256: s.sha256,
      location: s.location,
      status: s.status,
      attempts: s.attempts,
      lastError: s.lastError,
    }));
}

/** What the drop runner lends reprocessing: its store, claims and processing (`handle`, with back-off and put-back). */
export interface ReprocessDeps {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly workerId: string;
  readonly log: Logger;
  /** True once the runner is stopping: no further input is started. */
  stopping(): boolean;
  /** True while this worker may take files (the drop's lease). */
  leaseHeld(): boolean;
  handle(held: Claim, tryOptions: TryOptions): Promise<HandledOutcome>;
}

/** Tries each selected input once, in order; `onInput` hears of each as it ends. */
export async function reprocessSelected(
  deps: ReprocessDeps,
  selected: readonly ReprocessedInput[],
  onInput?: (input: ReprocessedInput) => void,
): Promise<ReprocessedInput[]> {
  const { log } = deps;
  const done: ReprocessedInput[] = [];
  for (const input of selected) {
    if (deps.stopping() || !deps.leaseHeld()) break;
    const result: ReprocessedInput = { ...input };
    try {
      await reprocessOne(deps, result);
    } catch (error) {
      // One unreadable input (a bad name, a failed claim) must not stop the others.
      result.outcome = 'retried';
      result.reason = (error as Error).message;
      log.error({ file: input.file, reason: result.reason }, 'reprocessing: input not tried');
    }
    if (result.outcome === 'missing')
      log.warn(
        { file: input.file, location: input.location, sha256: input.sha256 },
        'reprocessing: the input is no longer in the drop; skipped',
      );
    done.push(result);
    onInput?.(result);
  }
  return done;
}

async function reprocessOne(deps: ReprocessDeps, result: ReprocessedInput): Promise<void> {
  const { store, workerId } = deps;
  const location = result.location;
  const there = location !== undefined && (await store.stat(location)) !== undefined;
  // Selected a moment ago, but another worker (or the poller) may have taken it since.
  const now = await readState(store, result.sha256);
  if (
    !now ||
    now.status !== result.status ||
    now.location !== location ||
    (!there && (await claimedElsewhere(store, result.file)))
  ) {
    result.outcome = 'skipped';
    result.reason = 'another worker took it since it was selected';
    return;
  }
  if (!location || !there) {
    result.outcome = 'missing';
    return;
  }
  assertSafeName(location);
  // Stores with atomic rename: claim it first, so no other worker takes it while it is tried.
  const held: Claim | undefined = store.atomicRename
    ? await claim(store, result.file, workerId, Date.now(), location)
    : { name: result.file, current: location, lost: false };
  if (!held) {
    result.outcome = 'skipped';
    result.reason = 'another worker claimed it first';
    return;
  }
  const outcome = await deps.handle(held, { ignoreSchedule: true });
  const after = await readState(store, result.sha256).catch(() => undefined);
  result.attempt = after?.attempts;
  result.outcome = outcome === 'not-due' ? 'retried' : after?.status === 'dead' ? 'dead' : outcome;
  if (
    result.outcome !== 'accepted' &&
    result.outcome !== 'validated' &&
    result.outcome !== 'duplicate'
  )
    result.reason = after?.lastError;
}

/** Whether some worker holds a claim on a file of this name right now (it took the input between our selection and our claim). */
async function claimedElsewhere(store: DropStore, file: string): Promise<boolean> {
  if (!store.atomicRename) return false;
  return (await store.list(CLAIMS_FOLDER)).some((entry) => parseClaim(entry.name)?.name === file);
}

/** One log line for a scheduled reprocessing job: how many inputs ended how (nothing when none was tried). */
export function logReprocessReport(log: Logger, job: string, report: ReprocessReport): void {
  if (report.standby || report.inputs.length === 0) return;
  const counts: Record<string, number> = {};
  for (const input of report.inputs)
    counts[input.outcome ?? 'skipped'] = (counts[input.outcome ?? 'skipped'] ?? 0) + 1;
  log.info(
    { job, inputs: report.inputs.length, ...counts },
    `reprocessed ${report.inputs.length} input(s)`,
  );
}
