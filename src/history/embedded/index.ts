/**
 * The embedded history: one SQLite file under `dataDirectory` (better-sqlite3), so `npm start`
 * needs nothing installed (docs/decisions.md#the-history-store-sqlite-embedded-postgresql-for-fleets).
 * Several processes may open the file at once (`serve`, and `run --once` or `lineage` beside
 * it): SQLite's own locks order their writes, and WAL lets them read meanwhile.
 *
 * SQLite runs in a worker thread (worker.ts): this thread only posts each call's rows and awaits
 * the answer, so the queries' CPU stays off the event loop that answers requests. A worker that
 * dies (an uncaught error, terminated) fails the calls it had as `HistoryUnavailable`, so the
 * writer keeps their rows, and the next call starts a new worker on the same file, never a crash
 * of the service.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { workersOwnYoungGeneration } from '../../worker-heap.js';
import { HistoryUnavailable } from '../../operator-errors.js';
import { HistoryRowRefused } from '../refused.js';
import type { HistoryStore } from '../store.js';
import type { StoreMethod, WorkerAnswer, WorkerRequest, WorkerSetup } from './worker.js';

/** The file in the history's folder. */
export const HISTORY_FILE = 'history.sqlite';

export interface EmbeddedHistoryOptions {
  /** The history's folder (made when missing), which holds `history.sqlite` and SQLite's WAL beside it. */
  readonly directory: string;
  /** Told of each worker thread started (the tests end one to see the store recover). */
  readonly onWorker?: (worker: Worker) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export function createEmbeddedHistory(options: EmbeddedHistoryOptions): HistoryStore {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let held = false;
  let current: { worker: Worker; opened: Promise<void> } | undefined;

  function spawn(): Worker {
    const worker = startWorker({ file: path.join(options.directory, HISTORY_FILE) });
    // Idle, the worker does not keep the process up; a call in flight does (see send).
    worker.unref();
    let failure: Error | undefined;
    worker.on('message', (answer: WorkerAnswer) => {
      const call = pending.get(answer.id);
      if (!call) return;
      pending.delete(answer.id);
      if (pending.size === 0) worker.unref();
      if ('error' in answer) call.reject(revive(answer.error));
      else call.resolve(answer.value);
    });
    worker.on('error', (error) => (failure = error));
    worker.on('exit', (code) => {
      if (current?.worker === worker) current = undefined;
      const reason = new HistoryUnavailable(
        `the embedded history's worker thread ended (${failure ? failure.message : `exit code ${code}`}); a new one starts with the next write`,
        failure,
      );
      for (const call of pending.values()) call.reject(reason);
      pending.clear();
    });
    options.onWorker?.(worker);
    return worker;
  }

  function send(worker: Worker, method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, method, args } satisfies WorkerRequest);
    });
  }

  /** The open worker, started (and its store opened) when there is none. */
  function ready(): Promise<Worker> {
    if (!current) {
      const worker = spawn();
      const opened = send(worker, 'open', []).then(() => undefined);
      current = { worker, opened };
      // A worker that could not open is ended; the next call starts another.
      opened.catch(() => {
        if (current?.worker === worker) current = undefined;
        void worker.terminate();
      });
    }
    const { worker, opened } = current;
    return opened.then(() => worker);
  }

  const call =
    (method: Exclude<StoreMethod, 'open' | 'close'>) =>
    async (...args: unknown[]): Promise<never> => {
      if (!held) throw new HistoryUnavailable('the embedded history is not open');
      return (await send(await ready(), method, args)) as never;
    };

  return {
    name: 'embedded',
    async open() {
      if (!held) {
        await mkdir(options.directory, { recursive: true });
        held = true;
      }
      try {
        const fresh = !current;
        const worker = await ready();
        // Opening again applies the migrations again, as on the other store.
        if (!fresh) await send(worker, 'open', []);
      } catch (error) {
        if (!current) held = false;
        throw error;
      }
    },
    write: call('write'),
    batches: call('batches'),
    records: call('records'),
    listBatches: call('listBatches'),
    listEvents: call('listEvents'),
    eventsAbout: call('eventsAbout'),
    undeliveredSince: call('undeliveredSince'),
    endpointActivity: call('endpointActivity'),
    event: call('event'),
    attempts: call('attempts'),
    endpointStates: call('endpointStates'),
    dailyBatches: call('dailyBatches'),
    endpointDeliveries: call('endpointDeliveries'),
    batchRecords: call('batchRecords'),
    latestFailures: call('latestFailures'),
    prune: call('prune'),
    async close() {
      const open = current;
      current = undefined;
      if (open) {
        await send(open.worker, 'close', []).catch(() => undefined);
        await open.worker.terminate();
      }
      held = false;
    },
  };
}

/** An error from the worker as its type here: `HistoryUnavailable` and `HistoryRowRefused` stay so. */
function revive({ name, message }: { name: string; message: string }): Error {
  if (name === 'HistoryUnavailable') return new HistoryUnavailable(message);
  if (name === 'HistoryRowRefused') return new HistoryRowRefused(message);
  const error = new Error(message);
  error.name = name;
  return error;
}

/**
 * The built service runs `worker.js`; from source (the tests, under tsx or vitest) the worker is
 * the `.ts` file, which a new thread can only load with tsx's loader registered in it.
 */
function startWorker(setup: WorkerSetup): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(`./worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  workersOwnYoungGeneration(); // a nursery of V8's default size, not `npm start`'s 32 MiB semi-spaces
  if (!fromSource) return new Worker(entry, { workerData: setup });
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { workerData: setup, eval: true });
}
