import type { Logger } from '../log.js';
import { RECEIPT_SUFFIX } from './receipts.js';
import type { PipelineDefinition } from './definition.js';
import { STATE_FOLDER } from './state/persist.js';
import type { DropStore } from '../stores/store.js';

/** What `DropStore.write` names a file while writing it (local, SFTP): `<target>.<8 hex>.tmp`. */
const WRITING = /\.[0-9a-f]{8}\.tmp$/;

/**
 * Removes the temporary files of writes that never finished — a worker killed in the middle of
 * writing a state, an id list or a receipt — once they are older than `olderThanMs` (no write
 * takes that long). Only the worker's own folders are looked at; in the drop itself only a
 * receipt's temporary file, so a partner's `.tmp` upload is never touched. Returns the names removed.
 */
export async function sweepUnfinishedWrites(
  store: DropStore,
  pipeline: PipelineDefinition,
  olderThanMs: number,
  now = Date.now(),
): Promise<string[]> {
  const folders = [STATE_FOLDER, pipeline.after.processedFolder, pipeline.after.failedFolder];
  const removed: string[] = [];
  for (const folder of ['', ...folders]) {
    for (const entry of await store.list(folder || undefined)) {
      if (!WRITING.test(entry.name) || now - entry.modifiedMs < olderThanMs) continue;
      if (folder === '' && !entry.name.replace(WRITING, '').endsWith(RECEIPT_SUFFIX)) continue;
      await store.remove(entry.name);
      removed.push(entry.name);
    }
  }
  return removed;
}

const SWEEP_EVERY_MS = 3_600_000;

/**
 * The runner's housekeeping after a look: stores with rename write through a temporary name, so
 * their unfinished writes are swept on the first look and then at most hourly (S3 PUTs appear
 * whole: nothing to sweep). A failed sweep waits for the next one.
 */
export function createHousekeeping(
  store: DropStore,
  pipeline: PipelineDefinition,
  log: Logger,
): { sweep(): Promise<void> } {
  let sweptAt = -Infinity;
  return {
    async sweep() {
      if (!store.atomicRename || Date.now() - sweptAt < SWEEP_EVERY_MS) return;
      sweptAt = Date.now();
      const removed = await sweepUnfinishedWrites(store, pipeline, pipeline.claimLeaseMs).catch(
        (error: unknown) => {
          log.debug(
            { reason: (error as Error).message },
            'could not sweep unfinished writes; trying at the next sweep',
          );
          return [];
        },
      );
      if (removed.length > 0)
        log.info(
          { removed: removed.length, files: removed.slice(0, 10) },
          'removed temporary files of writes that never finished',
        );
    },
  };
}
