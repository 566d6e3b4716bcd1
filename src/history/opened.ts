/**
 * One opening shared by everything that uses a store in `serve`: the writer opens it with its
 * first write, and a read (the partner API) may come first. Opened once (a second `open()` while
 * the first runs waits for it, instead of taking the embedded folder's lock a second time or
 * migrating twice); a failed opening is tried again by the next caller. Reads wait for it, so a
 * read before the first write finds the tables.
 */
import type { HistoryStore } from './store.js';

export function openedOnce(store: HistoryStore): HistoryStore {
  let opening: Promise<void> | undefined;
  const open = () =>
    (opening ??= store.open().catch((error: unknown) => {
      opening = undefined;
      throw error;
    }));
  // Called on the store, not detached: an adapter's methods may use `this`.
  const after =
    <K extends Exclude<keyof HistoryStore, 'name' | 'open' | 'close'>>(method: K) =>
    async (...args: Parameters<HistoryStore[K]>): Promise<Awaited<ReturnType<HistoryStore[K]>>> => {
      await open();
      const call = store[method] as (
        ...a: Parameters<HistoryStore[K]>
      ) => Promise<Awaited<ReturnType<HistoryStore[K]>>>;
      return call.apply(store, args);
    };
  return {
    name: store.name,
    open,
    write: after('write'),
    batches: after('batches'),
    records: after('records'),
    listBatches: after('listBatches'),
    event: after('event'),
    attempts: after('attempts'),
    endpointStates: after('endpointStates'),
    prune: after('prune'),
    close: () => store.close(),
  };
}
