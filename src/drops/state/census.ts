import type { InputState } from './input-state.js';
import { INPUT_STATUSES, type InputStatus } from '../../vocabulary.js';
import { listStatesIn, STATE_FOLDER } from './persist.js';
import type { DropStore } from '../../stores/store.js';

/**
 * How many inputs of a drop are in each state, kept up to date cheaply: each `count()` lists the
 * state folder once and reads only the state files that changed since the last count. The
 * `warehouse_ingest_inputs` gauge follows it; a worker that just started reads every state once.
 */
export interface StateCensus {
  count(): Promise<Record<InputStatus, number>>;
}

export function createStateCensus(store: DropStore): StateCensus {
  /** Per state file: its modification time when read, and the status it held. */
  const known = new Map<string, { modifiedMs: number; status: InputStatus | undefined }>();
  return {
    async count() {
      const entries = (await store.list(STATE_FOLDER)).filter((e) => e.name.endsWith('.json'));
      const present = new Set(entries.map((e) => e.name));
      for (const name of known.keys()) if (!present.has(name)) known.delete(name);
      const changed = entries.filter((e) => known.get(e.name)?.modifiedMs !== e.modifiedMs);
      const states = await listStatesIn(store, changed);
      const byName = new Map<string, InputState>(
        states.map((s) => [`${STATE_FOLDER}/${s.sha256}.json`, s]),
      );
      for (const entry of changed)
        known.set(entry.name, {
          modifiedMs: entry.modifiedMs,
          status: byName.get(entry.name)?.status,
        });
      const counts = Object.fromEntries(INPUT_STATUSES.map((status) => [status, 0])) as Record<
        InputStatus,
        number
      >;
      for (const { status } of known.values()) if (status && status in counts) counts[status] += 1;
      return counts;
    },
  };
}
