/**
 * The embedded history's worker thread: SQLite (every query, better-sqlite3's synchronous calls)
 * runs here, off the service's event loop. The thread that owns it (index.ts) posts each store
 * call as plain rows (a structured clone) and awaits the answer; one call runs at a time, in the
 * order posted. Failures cross back as their name and message, so `HistoryUnavailable` stays typed.
 * The addon is loaded here only, never also on a main thread: a test process that loaded it in
 * both crashed at exit on Node 24.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HistoryUnavailable } from '../../operator-errors.js';
import type { HistoryStore } from '../store.js';
import { openSqliteHistory } from './file.js';

/** What the owning thread hands the worker when it starts it. */
export interface WorkerSetup {
  /** The SQLite file (made when missing). */
  readonly file: string;
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

let opened: Promise<HistoryStore> | undefined;
// One call at a time, in order: each awaits the one before.
let last: Promise<unknown> = Promise.resolve();

async function run(method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
  if (method === 'close') {
    const open = opened;
    opened = undefined;
    if (open) await (await open).close();
    return undefined;
  }
  if (!opened) {
    if (method !== 'open') throw new HistoryUnavailable('the embedded history is not open');
    opened = openSqliteHistory(setup.file);
    opened.catch(() => (opened = undefined));
  }
  const store = await opened;
  return (store[method] as (...a: readonly unknown[]) => Promise<unknown>)(...args);
}

port.on('message', (request: WorkerRequest) => {
  const answer = last.then(() => run(request.method, request.args));
  last = answer.catch(() => undefined);
  answer.then(
    (value) => port.postMessage({ id: request.id, value } satisfies WorkerAnswer),
    (error: unknown) => {
      const { name = 'Error', message = String(error) } = (error ?? {}) as Error;
      port.postMessage({ id: request.id, error: { name, message } } satisfies WorkerAnswer);
    },
  );
});
