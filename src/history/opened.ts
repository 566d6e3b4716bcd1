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
  // Every other method (a read, a write, the prune) waits for the opening first; a Proxy, so a
  // method added to the port is covered without a list to keep in step. Called on the store
  // itself: an adapter's methods may use `this`.
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'open') return open;
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key === 'close' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await open();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
