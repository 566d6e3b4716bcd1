import { RECEIPT_SUFFIX, receiptName, type Receipt } from '../receipts.js';
import type { DropMetrics } from '../metrics.js';
import type { PipelineDefinition } from '../definition.js';
import type { Claim } from '../claims.js';
import type { SettlePlan } from '../state/input-state.js';
import { writeAcknowledgment, writeReceiptFile } from '../receipts.js';
import { sha256Of } from '../spool.js';
import type { DropStore } from '../../stores/store.js';

/**
 * Settles a file once its outcome is known: the receipt first, then the input to its final place
 * (`processed/` or `failed/`, deleted, or kept), so a crash in between only repeats the receipt.
 * Any step that fails throws: the caller puts the file back and it is settled again later
 * (its state says it was published, so it is never published twice).
 */
export interface SettleOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly metrics?: Pick<DropMetrics, 'receiptWriteFailed'>;
}

/** Where the receipt was written, and where the input is now (undefined once deleted). */
export interface Settled {
  receipt: string;
  location: string | undefined;
}

/**
 * The plan for settling `held` (whose bytes hash to `sha256`). `unfinished`: the plan of a settle
 * of the same file that never completed; it is carried out again, overwriting its own receipt,
 * if its `moveTo` is free or already holds these very bytes (the move was cut between its link
 * and its unlink, or S3's copy and delete). Another file there gets a new place.
 */
export async function planSettle(
  { pipeline, store }: SettleOptions,
  held: Claim,
  sha256: string,
  success: boolean,
  unfinished?: SettlePlan,
): Promise<SettlePlan> {
  if (
    unfinished?.success === success &&
    unfinished.moveTo !== undefined &&
    (!(await store.stat(unfinished.moveTo)) || (await holdsBytes(store, unfinished.moveTo, sha256)))
  )
    return unfinished;
  const moveTo = await finalPlace(pipeline, store, held.name, success);
  return { success, ...(moveTo ? { moveTo } : {}), receipt: receiptName(moveTo ?? held.name) };
}

/**
 * `local` is a scratch path for composing the receipt; `ids` the local id list; `input` the
 * spooled copy of the input (an X12 input's 997 is made from it, beside the receipt).
 */
export async function settle(
  { pipeline, store, metrics }: SettleOptions,
  held: Claim,
  sha256: string,
  receipt: Receipt,
  plan: SettlePlan,
  local: { receipt: string; ids?: string; input?: string },
): Promise<Settled> {
  const { success, moveTo, receipt: written } = plan;
  const action = success ? pipeline.after.success : pipeline.after.failure;
  await writeReceiptFile(local.receipt, receipt, local.ids);
  if (!moveTo && action !== 'delete') await keepEarlierReceipt(store, written);
  try {
    await store.write(written, { file: local.receipt });
  } catch (error) {
    metrics?.receiptWriteFailed(pipeline.name);
    throw error;
  }
  if (pipeline.format === 'x12' && local.input)
    await writeAcknowledgment(store, { path: local.input, sha256 }, receipt, written);
  if (moveTo) {
    if (!(await store.rename(held.current, moveTo))) {
      // An earlier try's move, cut short, left the file under both names: finish it.
      if (!(await holdsBytes(store, moveTo, sha256)))
        throw new Error(`could not move ${held.current} to ${moveTo}`);
      await store.remove(held.current);
    }
  } else if (action === 'delete') {
    await store.remove(held.current);
  } else if (held.current !== held.name && !(await store.rename(held.current, held.name))) {
    throw new Error(`could not put ${held.current} back as ${held.name}`);
  }
  if (pipeline.readiness.strategy === 'marker')
    await store.remove(`${held.name}${pipeline.readiness.markerSuffix}`);
  return { receipt: written, location: moveTo ?? (action === 'delete' ? undefined : held.name) };
}

/**
 * Where a settled file goes. A name already taken there — by a file or by the receipt of an
 * earlier try of the same name — gets a time prefix: neither a file nor a receipt is ever overwritten.
 */
async function finalPlace(
  pipeline: PipelineDefinition,
  store: DropStore,
  name: string,
  success: boolean,
): Promise<string | undefined> {
  const action = success ? pipeline.after.success : pipeline.after.failure;
  if (action !== 'move') return undefined;
  const folder = success ? pipeline.after.processedFolder : pipeline.after.failedFolder;
  const target = `${folder}/${name}`;
  const taken = (await store.stat(target)) || (await store.stat(receiptName(target)));
  return taken ? `${folder}/${stamp(Date.now())}-${name}` : target;
}

/**
 * A kept file's receipt has a fixed name (the runner sees the file is done by it). An earlier
 * receipt there — the file was reprocessed — is renamed aside with its own time, never lost.
 */
async function keepEarlierReceipt(store: DropStore, written: string): Promise<void> {
  const earlier = await store.stat(written);
  if (!earlier) return;
  const receiptStem = written.slice(0, -RECEIPT_SUFFIX.length);
  await store.rename(written, `${receiptStem}.${stamp(earlier.modifiedMs)}${RECEIPT_SUFFIX}`);
}

/** Whether the file `name` holds exactly the bytes hashing to `sha256` (false when it is gone). */
async function holdsBytes(store: DropStore, name: string, sha256: string): Promise<boolean> {
  return (await sha256Of(store, name).catch(() => undefined)) === sha256;
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/[:.]/g, '-');
