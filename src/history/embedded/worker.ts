/**
 * The embedded history's worker thread: PGlite (its WASM, every query) runs here, off the
 * service's event loop. The thread that owns it (index.ts) posts each store call as plain rows
 * (a structured clone) and awaits the answer; one call runs at a time, in the order posted.
 * Failures cross back as their name and message, so `HistoryUnavailable` stays typed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HistoryUnavailable } from '../../errors.js';
import { createSqlHistory } from '../sql/queries.js';
import type { HistoryStore } from '../store.js';
import { openPglite, type OpenedPglite } from './pglite.js';

/** What the owning thread hands the worker when it starts it. */
export interface WorkerSetup {
  readonly directory: string;
}

/** A store call: `open`, `close`, or a method of `HistoryStore` with its arguments. */
export interface WorkerRequest {
  readonly id: number;
  readonly method: StoreMethod;
  readonly args: readonly unknown[];
}

export type StoreMethod = Exclude<keyof HistoryStore, 'name'>;

export type WorkerAnswer =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string } };

const port = parentPort;
if (!port) throw new Error('history/embedded/worker.ts runs only as a worker thread');
const { directory } = workerData as WorkerSetup;

let opened: Promise<{ pglite: OpenedPglite; store: HistoryStore }> | undefined;
// One call at a time, in order: PGlite has one session.
let queue: Promise<unknown> = Promise.resolve();

async function run(method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
  if (method === 'close') {
    const open = opened;
    opened = undefined;
    if (open) await (await open).store.close();
    return undefined;
  }
  if (!opened) {
    if (method !== 'open') throw new HistoryUnavailable('the embedded history is not open');
    opened = openPglite(directory).then((pglite) => ({
      pglite,
      store: createSqlHistory('embedded', pglite.client),
    }));
    opened.catch(() => (opened = undefined));
  }
  const { store } = await opened;
  return (store[method] as (...a: readonly unknown[]) => Promise<unknown>)(...args);
}

port.on('message', (request: WorkerRequest) => {
  const done = queue.then(() => run(request.method, request.args));
  queue = done.catch(() => undefined);
  done.then(
    (value) => port.postMessage({ id: request.id, value } satisfies WorkerAnswer),
    (error: unknown) => {
      const { name = 'Error', message = String(error) } = (error ?? {}) as Error;
      port.postMessage({ id: request.id, error: { name, message } } satisfies WorkerAnswer);
    },
  );
});
