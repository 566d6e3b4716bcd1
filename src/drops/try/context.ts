import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Environment } from '../../config/schema.js';
import type { Logger } from '../../log.js';
import type { DropMetrics } from '../metrics.js';
import type { Ingest } from '../../ingest/batch.js';
import type { Receipt } from '../receipts.js';
import type { ProfilesSource } from '../../records/legacy/index.js';
import { ClaimLost, type Claim } from '../claims.js';
import type { PipelineDefinition } from '../definition.js';
import type { DropLease } from '../lease.js';
import { spool, SPOOL_OWNER, type Spooled } from '../spool.js';
import { OwedStates } from './owed.js';
import type { TryOptions } from './outcome.js';
import type { InputState, SettlePlan } from '../state/input-state.js';
import { readState, StaleState, writeState } from '../state/persist.js';
import type { DropStore } from '../../stores/store.js';

export interface FileProcessorOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: ProfilesSource;
  readonly log: Logger;
  readonly lease: DropLease;
  readonly workerId: string;
  /** Local folder for copies of files being processed. */
  readonly spoolDirectory: string;
  readonly maxJsonBytes: number;
  /** A v1 CSV file this large (a v2-JSON file 8× as large) is validated in two halves at once (`DropRunnerOptions.halvesFromBytes`). */
  readonly halvesFromBytes: number;
  readonly maxRecords?: number;
  readonly metrics?: Pick<DropMetrics, 'receiptWriteFailed'>;
  /** Said in every receipt; in the sandbox an accepted file's receipt says `validated`. @default 'production' */
  readonly environment?: Environment;
  /**
   * Aborted when the worker stops and its grace time is over: the file in hand is interrupted at
   * the next safe point (see `StreamBatch.signal`), its progress kept, and it is given back.
   * @default never
   */
  readonly signal?: AbortSignal;
}

/** What every try of one processor shares: its options, and how it writes and loses states. */
export interface TryContext extends FileProcessorOptions {
  /** `<store type>:<where>`, for receipts. */
  readonly source: string;
  /** Writes the state (as this worker's); resolves with it as written. */
  save(state: InputState): Promise<InputState>;
  /** States an outage kept from being written (owed.ts): applied by the next try of the same bytes here. */
  readonly owed: OwedStates;
}

export function createTryContext(options: FileProcessorOptions): TryContext {
  const { store } = options;
  return {
    ...options,
    source: `${store.type}:${store.where}`,
    save: (state) => writeState(store, { ...state, worker: options.workerId }),
    owed: new OwedStates(),
  };
}

/** One try of one claimed file: the facts every step of it reads. Its state is passed along apart. */
export interface FileTry {
  readonly held: Claim;
  readonly log: Logger;
  /** The try's trace, written on every message it publishes (`TryOptions.trace`). */
  readonly trace?: TryOptions['trace'];
  /** When this try took the file (ISO 8601). */
  readonly receivedAt: string;
  /** This try's scratch folder in the spool, and the local files composed there. */
  readonly work: string;
  /** Stops renewing the claim (before settling: the settle ends the claim). */
  stopHeartbeat(): Promise<void>;
  /** Throws `ClaimLost` when the file is no longer this worker's; asked before each chunk is published. */
  verifyHeld(): Promise<void>;
  readonly local: { readonly receipt: string; readonly ids: string; readonly lineage: string };
  readonly spooled: Spooled;
  /** The file as receipts describe it. */
  readonly file: Receipt['file'];
  /** What earlier tries of these bytes left in the drop (or owed it), if anything. */
  readonly earlier: InputState | undefined;
  /** A settle of this same file that a crash cut short: carried out again (one receipt, not two). */
  readonly unfinishedSettle: SettlePlan | undefined;
}

/** A fresh scratch folder name in the spool for one try (removed when the try ends). */
export const scratchFolder = (ctx: TryContext) =>
  path.join(ctx.spoolDirectory, `${SPOOL_OWNER}${randomUUID()}`);

/** Copies the file into the spool (hashing it) and reads what its bytes did before. */
export async function openFileTry(
  ctx: TryContext,
  {
    held,
    log,
    work,
    stopHeartbeat,
    verifyHeld,
    trace,
  }: Pick<FileTry, 'held' | 'log' | 'work' | 'stopHeartbeat' | 'verifyHeld' | 'trace'>,
): Promise<FileTry> {
  const receivedAt = new Date().toISOString();
  const local = {
    receipt: path.join(work, 'receipt.json'),
    ids: path.join(work, 'message-ids'),
    lineage: path.join(work, 'lineage'),
  };
  await mkdir(work, { recursive: true });
  const spooled = await spool(ctx.store, held.current, work);
  const earlier = ctx.owed.settle(spooled.sha256, await readState(ctx.store, spooled.sha256));
  return {
    held,
    log,
    ...(trace && { trace }),
    receivedAt,
    work,
    stopHeartbeat,
    verifyHeld,
    local,
    spooled,
    file: { name: held.name, size: spooled.size, sha256: spooled.sha256, source: ctx.source },
    earlier,
    unfinishedSettle: earlier?.file === held.name ? earlier.settling : undefined,
  };
}

/** What every receipt of this try says about the file. */
export function receiptFacts(ctx: TryContext, tr: FileTry, attempt: number) {
  const { pipeline } = ctx;
  return {
    pipeline: pipeline.name,
    businessId: pipeline.businessId,
    kind: pipeline.kind,
    format: pipeline.format,
    environment: ctx.environment ?? 'production',
    file: tr.file,
    receivedAt: tr.receivedAt,
    attempt,
  };
}

/** The claim went to another worker (missed heartbeat), or the drop's lease did: stop before any effect. */
export const lost = (ctx: TryContext, held: Claim) => held.lost || !ctx.lease.held;

/**
 * Another worker has the file now: its claim or lease was lost (`ClaimLost`), or a state write
 * found the state moved on (`StaleState`). The try stops where it is and settles nothing.
 */
export const lostToAnother = (error: unknown) =>
  error instanceof ClaimLost || error instanceof StaleState;

/** What a file whose every record passed says: accepted, or in the sandbox (nothing published) validated. */
export const acceptedOutcome = (ctx: TryContext) =>
  ctx.environment === 'sandbox' ? ('validated' as const) : ('accepted' as const);
