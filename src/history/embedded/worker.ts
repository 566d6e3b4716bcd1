/**
 * The embedded history's worker thread: PGlite (its WASM, every query) runs here, off the
 * service's event loop. The thread that owns it (index.ts) posts each store call as plain rows
 * (a structured clone) and awaits the answer; one call runs at a time, in the order posted.
 * Failures cross back as their name and message, so `HistoryUnavailable` stays typed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HistoryUnavailable } from '../../operator-errors.js';
import { createSqlHistory } from '../sql/queries.js';
import type { HistoryStore } from '../store.js';
import { openPglite, type OpenedPglite } from './pglite.js';
import { Session, serveSocket, type ServedSocket } from './socket.js';

/** What the owning thread hands the worker when it starts it. */
export interface WorkerSetup {
  readonly directory: string;
  /** Serve the database on a unix socket beside the folder (socket.ts), for commands while this process holds it. */
  readonly serveSocket: boolean;
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
const setup = workerData as WorkerSetup;

let opened:
  | Promise<{ pglite: OpenedPglite; store: HistoryStore; socket: ServedSocket | undefined }>
  | undefined;
// One call at a time, in order, and never during a socket client's exchange: PGlite has one session.
const session = new Session();

async function run(method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
  if (method === 'close') {
    const open = opened;
    opened = undefined;
    if (open) {
      const { store, socket } = await open;
      await socket?.close();
      await store.close();
    }
    return undefined;
  }
  if (!opened) {
    if (method !== 'open') throw new HistoryUnavailable('the embedded history is not open');
    opened = openPglite(setup.directory).then(async (pglite) => ({
      pglite,
      store: createSqlHistory('embedded', pglite.client),
      // Without it (a path too long for a socket), commands say the folder is held, as before.
      socket: setup.serveSocket
        ? await serveSocket(pglite.db, setup.directory, session).catch(() => undefined)
        : undefined,
    }));
    opened.catch(() => (opened = undefined));
  }
  const { store } = await opened;
  return (store[method] as (...a: readonly unknown[]) => Promise<unknown>)(...args);
}

port.on('message', (request: WorkerRequest) => {
  // Clients are cut off first, so the close does not wait for one holding the session.
  if (request.method === 'close')
    void opened?.then(
      ({ socket }) => socket?.close(),
      () => undefined,
    );
  session
    .run(() => run(request.method, request.args))
    .then(
      (value) => port.postMessage({ id: request.id, value } satisfies WorkerAnswer),
      (error: unknown) => {
        const { name = 'Error', message = String(error) } = (error ?? {}) as Error;
        port.postMessage({ id: request.id, error: { name, message } } satisfies WorkerAnswer);
      },
    );
});
