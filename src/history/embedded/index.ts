/**
 * The embedded history: PGlite (PostgreSQL compiled to WASM) in a folder under `dataDirectory`,
 * so `npm start` needs nothing installed and the SQL is the PostgreSQL adapter's own
 * (docs/decisions.md#the-history-store-pglite-embedded-postgresql-for-fleets).
 *
 * PGlite runs in a worker thread (worker.ts): this thread only posts each call's rows and awaits
 * the answer, so the WASM's CPU and its heap stay off the event loop that answers requests. The
 * folder's lock (lock.ts) is this process's: a worker that dies (an uncaught error, terminated)
 * fails the calls it had as `HistoryUnavailable`, so the writer keeps their rows, and the next
 * call starts a new worker on the same folder, never a crash of the service.
 */
import { mkdir } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { HistoryUnavailable } from '../../operator-errors.js';
import type { HistoryStore } from '../store.js';
import { releaseLock, takeLock } from './lock.js';
import type { StoreMethod, WorkerAnswer, WorkerRequest, WorkerSetup } from './worker.js';

export interface EmbeddedHistoryOptions {
  /** The database folder (made when missing); `<folder>.lock` is taken beside it. */
  readonly directory: string;
  /**
   * Serve the database on a unix socket beside the folder while open, so commands reach it
   * while this process holds the folder (`serve` does; a command does not).
   * @default false
   */
  readonly serveSocket?: boolean;
  /** Told of each worker thread started (the tests end one to see the store recover). */
  readonly onWorker?: (worker: Worker) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export function createEmbeddedHistory(options: EmbeddedHistoryOptions): HistoryStore {
  const lockFile = `${options.directory}.lock`;
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let held = false;
  let current: { worker: Worker; opened: Promise<void> } | undefined;

  function spawn(): Worker {
    const worker = startWorker({
      directory: options.directory,
      serveSocket: options.serveSocket ?? false,
    });
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
        await takeLock(lockFile);
        held = true;
      }
      try {
        const fresh = !current;
        const worker = await ready();
        // Opening again applies the migrations again, as on the other store.
        if (!fresh) await send(worker, 'open', []);
      } catch (error) {
        if (!current) {
          held = false;
          await releaseLock(lockFile);
        }
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
    prune: call('prune'),
    async close() {
      const open = current;
      current = undefined;
      if (open) {
        await send(open.worker, 'close', []).catch(() => undefined);
        await open.worker.terminate();
      }
      if (held) {
        held = false;
        await releaseLock(lockFile);
      }
    },
  };
}

/** An error from the worker as its type here: `HistoryUnavailable` stays one. */
function revive({ name, message }: { name: string; message: string }): Error {
  if (name === 'HistoryUnavailable') return new HistoryUnavailable(message);
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
  if (!fromSource) return new Worker(entry, { workerData: setup });
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { workerData: setup, eval: true });
}
