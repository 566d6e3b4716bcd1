import type { Logger } from '../log.js';
import { createAlreadyDone } from './already-done.js';
import type { PipelineDefinition } from './definition.js';
import { assertSettleFolders, settleFolders } from './layout.js';
import type { DropEntry, DropStore } from '../stores/store.js';
import { createReadiness } from './upload-ready.js';

/** What one look at the drop found. */
export interface Look {
  /** Inputs ready to be taken. */
  ready: DropEntry[];
  /** Inputs present but not ready yet. */
  arriving: number;
  /** Kept files whose bytes were settled in place before: left as they are. */
  done: number;
}

/**
 * A runner's looks at its drop: list, set apart what is already done (already-done.ts), and ask
 * the readiness strategy (upload-ready.ts) which of the rest may be taken.
 */
export function createLooks(
  store: DropStore,
  pipeline: PipelineDefinition,
  log: Logger,
): {
  /**
   * One look; `waitForArriving` (run --once): look again every `intervalMs` while files are arriving,
   * as the poll would, until a file seen changing has been quiet long enough — at most ten quiet
   * periods in all, for a file that never stops changing.
   */
  look(options: { waitForArriving: boolean; stopping: () => boolean }): Promise<Look>;
} {
  const readiness = createReadiness(pipeline);
  const folders = settleFolders(pipeline);
  const alreadyDone = createAlreadyDone(store, log);

  async function once(): Promise<Look & { changed: boolean }> {
    const entries = await store.list();
    await assertSettleFolders(store, folders, entries); // no file is taken that could not be settled
    const names = new Set(entries.map((entry) => entry.name));
    const { todo, done } = await alreadyDone.split(entries, names, Date.now());
    return { ...readiness.look(todo, Date.now()), done: done.length };
  }

  return {
    async look({ waitForArriving, stopping }) {
      let found = await once();
      const longest = readiness.longestWaitMs;
      const started = Date.now();
      let waitUntil = started + longest;
      while (waitForArriving && found.arriving > 0 && Date.now() < waitUntil && !stopping()) {
        await new Promise((resolve) => setTimeout(resolve, pipeline.readiness.intervalMs));
        found = await once();
        if (found.changed) waitUntil = Math.min(Date.now() + longest, started + 10 * longest);
      }
      return { ready: found.ready, arriving: found.arriving, done: found.done };
    },
  };
}
