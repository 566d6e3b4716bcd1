import type { PipelineDefinition } from './definition.js';
import type { DropEntry, DropStore } from '../stores/store.js';
import { DropMisconfigured } from '../operator-errors.js';

/**
 * Whether a drop is laid out so the worker can do its job: the folder exists (each store's
 * `list` says when it does not) and no regular file sits where a settle folder must be.
 */

/** The folders a pipeline's settle moves files into (`after.*: move`). */
export function settleFolders(pipeline: Pick<PipelineDefinition, 'after'>): string[] {
  const { after } = pipeline;
  return [
    ...(after.success === 'move' ? [after.processedFolder] : []),
    ...(after.failure === 'move' ? [after.failedFolder] : []),
  ];
}

/**
 * Throws `DropMisconfigured` when a settle folder, or a folder on its way, is a regular file.
 * `top`: the drop's own listing (files only), which answers for top-level names. Only stores
 * with real folders (local, SFTP: those with an atomic rename) can be blocked this way; in S3 a
 * key `processed` and keys under `processed/` live side by side.
 */
export async function assertSettleFolders(
  store: DropStore,
  folders: readonly string[],
  top: readonly DropEntry[],
): Promise<void> {
  if (!store.atomicRename) return;
  const files = new Set(top.map((e) => e.name));
  for (const folder of folders) {
    const parts = folder.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const name = parts.slice(0, i).join('/');
      if (i === 1 ? files.has(name) : await store.stat(name))
        throw new DropMisconfigured(
          'settle-folder-is-a-file',
          `"${name}" in the drop is a regular file, but files are settled into the folder "${folder}": move that file away (or change after.processedFolder / after.failedFolder)`,
        );
    }
  }
}

/** Lists the drop and checks its layout: what `/readyz`, `status` and `lint` ask of a drop. */
export async function checkDrop(store: DropStore, folders: readonly string[]): Promise<void> {
  await assertSettleFolders(store, folders, await store.list());
}
