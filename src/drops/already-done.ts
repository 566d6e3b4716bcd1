import type { Logger } from '../log.js';
import { receiptName } from './receipts.js';
import type { InputStatus } from '../vocabulary.js';
import { sha256Of } from './spool.js';
import { readState } from './state/persist.js';
import type { DropEntry, DropStore } from '../stores/store.js';

/**
 * Which files in the top folder are already done: kept files (`after.success` or
 * `after.failure: keep`) whose very bytes were settled there before, under that name. Decided by
 * content — the SHA-256 the input's state is keyed on — never by comparing modification times:
 * `cp -p`, `sftp -p` and `rsync -t` upload new bytes with an old mtime, and a newer receipt next
 * to a file says nothing about the bytes in it now. Different bytes are a new input; the same
 * bytes again are left as they are (logged once, counted in the look's summary).
 *
 * Only a file with a receipt next to it can have been settled in place, so only those are hashed
 * (one read each, then remembered while the file keeps its size and mtime). The verdict is checked
 * against the state again after `RECHECK_MS`, so an operator who deletes a dead input's state to
 * try it again does not need to restart the worker.
 */
export interface AlreadyDone {
  /** Splits the files of a look; `names`: every name the look listed. */
  split(
    entries: readonly DropEntry[],
    names: ReadonlySet<string>,
    now: number,
  ): Promise<{ todo: DropEntry[]; done: DropEntry[] }>;
}

/** Statuses after which an input settled in place is not taken again. */
const SETTLED: readonly InputStatus[] = ['receipted', 'failed', 'dead'];
const RECHECK_MS = 600_000;

export function createAlreadyDone(store: DropStore, log: Logger): AlreadyDone {
  /** name → what the last check found for the file as it was then. */
  const known = new Map<
    string,
    { size: number; modifiedMs: number; sha256: string; done: boolean; checkedAt: number }
  >();

  async function check(entry: DropEntry, now: number): Promise<boolean> {
    const before = known.get(entry.name);
    const same =
      before !== undefined && before.size === entry.size && before.modifiedMs === entry.modifiedMs;
    if (same && now - before.checkedAt < RECHECK_MS) return before.done;
    const sha256 = same ? before.sha256 : await sha256Of(store, entry.name);
    const state = await readState(store, sha256);
    const receipt = receiptName(entry.name);
    const done =
      state !== undefined &&
      SETTLED.includes(state.status) &&
      (state.receipt === receipt || (state.receipts ?? []).includes(receipt));
    known.set(entry.name, { ...entry, sha256, done, checkedAt: now });
    if (done && !(same && before.done))
      log.info(
        { file: entry.name, sha256, status: state.status, receipt },
        'already done: these bytes were settled here before; left as they are',
      );
    return done;
  }

  return {
    async split(entries, names, now) {
      for (const name of known.keys()) if (!names.has(name)) known.delete(name);
      const todo: DropEntry[] = [];
      const done: DropEntry[] = [];
      for (const entry of entries) {
        // A file that cannot be read now is left to the try, which handles (and reports) that.
        const settledHere =
          names.has(receiptName(entry.name)) && (await check(entry, now).catch(() => false));
        (settledHere ? done : todo).push(entry);
      }
      return { todo, done };
    },
  };
}
