import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import {
  formatHash,
  hashApiKey,
  type ParsedHash,
  type ScryptCost,
  scryptCost,
  verifyApiKey,
} from '../api-keys.js';

/**
 * The operators' password hashing, on a thread of its own. scrypt through `node:crypto`'s
 * callback runs on libuv's thread pool (4 threads by default), the same pool every API key's
 * check, file read and DNS lookup of the service waits for: 64 sign-ins at once held a
 * business's first request 28.5 s (issue 38). Here one worker thread runs `scryptSync`, one
 * password at a time, so a flood of sign-ins takes at most one core and leaves the pool alone;
 * and at most `maxQueued` wait for it (the rest are refused at once: `HasherBusy`), so memory
 * stays one scrypt's (128 MiB at ln=17) plus a short queue of small messages, and a try waits
 * at most that many hashes.
 *
 * The worker's code is a string evaluated in the thread: a file of its own would need a loader
 * from source (tests) and an entry in the build, for twelve lines.
 */
export interface PasswordHasher {
  /** Whether `password` is the one `stored` was made from (constant-time comparison). */
  verify(password: string, stored: ParsedHash): Promise<boolean>;
  /** A new hash of `password` at `cost`, in PHC form (`hash-key`'s). */
  hash(password: string, cost: ScryptCost): Promise<string>;
  /** Hashes running or waiting now. */
  readonly pending: number;
  close(): Promise<void>;
}

/** More sign-ins wait for the hasher than it queues: this one was not tried. */
export class HasherBusy extends Error {
  override readonly name = 'HasherBusy';
}

export interface PasswordHasherOptions {
  /**
   * Hashes waiting (the running one included) before more are refused. More than one address's
   * tries (portal.signInLimits.perAddress): one address alone cannot fill it. @default 32
   */
  readonly maxQueued?: number;
  /**
   * Where scrypt runs: `'worker'` (a thread of its own) or `'pool'` (libuv's pool, as API keys).
   * `'pool'` is only for comparing the two (the test that shows the starvation). @default 'worker'
   */
  readonly on?: 'worker' | 'pool';
}

/**
 * The thread also lowers its own CPU priority (nice 19; on Linux the nice value is a thread's,
 * so the service's other threads keep theirs): on a busy machine a flood's hashing then yields
 * the cores to API-key checks and requests. Elsewhere it would lower the whole process: not done.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync, timingSafeEqual } = require('node:crypto');
if (process.platform === 'linux') {
  try { require('node:os').setPriority(0, 19); } catch {}
}
parentPort.on('message', ({ id, password, salt, length, N, r, p, expected }) => {
  try {
    const options = { N, r, p, maxmem: 256 * N * r };
    const derived = scryptSync(password, Buffer.from(salt), length, options);
    const matches = expected ? timingSafeEqual(derived, Buffer.from(expected)) : undefined;
    parentPort.postMessage({ id, matches, derived: expected ? undefined : derived });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message) });
  }
});`;

interface Job {
  readonly resolve: (answer: { matches?: boolean; derived?: Uint8Array }) => void;
  readonly reject: (error: Error) => void;
}

export function createPasswordHasher(options: PasswordHasherOptions = {}): PasswordHasher {
  const maxQueued = options.maxQueued ?? 32;
  let pending = 0;
  const admit = <T>(run: () => Promise<T>): Promise<T> => {
    if (pending >= maxQueued) return Promise.reject(new HasherBusy('the password hasher is busy'));
    pending += 1;
    return run().finally(() => {
      pending -= 1;
    });
  };
  if (options.on === 'pool')
    return {
      verify: (password, stored) => admit(() => verifyApiKey(password, stored)),
      hash: (password, cost) => admit(() => hashApiKey(password, cost)),
      get pending() {
        return pending;
      },
      close: async () => undefined,
    };

  let worker: Worker | undefined;
  let nextId = 0;
  const jobs = new Map<number, Job>();
  const failAll = (error: Error) => {
    for (const job of jobs.values()) job.reject(error);
    jobs.clear();
    worker = undefined;
  };
  const started = (): Worker => {
    if (worker) return worker;
    const thread = new Worker(WORKER_SOURCE, { eval: true });
    // A sign-in waiting for it keeps the process up; an idle hasher does not.
    thread.unref();
    thread.on('message', (answer: { id: number; error?: string; matches?: boolean }) => {
      const job = jobs.get(answer.id);
      jobs.delete(answer.id);
      if (!job) return;
      if (answer.error === undefined) job.resolve(answer);
      else job.reject(new Error(`scrypt failed: ${answer.error}`));
    });
    thread.on('error', (error) => failAll(error));
    thread.on('exit', () => failAll(new Error('the password hasher stopped')));
    worker = thread;
    return thread;
  };
  const run = (message: Record<string, unknown>) =>
    new Promise<{ matches?: boolean; derived?: Uint8Array }>((resolve, reject) => {
      const id = nextId++;
      jobs.set(id, { resolve, reject });
      started().postMessage({ id, ...message });
    });

  return {
    verify: (password, stored) =>
      admit(async () => {
        const { matches } = await run({
          password,
          salt: stored.salt,
          length: stored.hash.length,
          ...scryptCost(stored),
          expected: stored.hash,
        });
        return matches === true;
      }),
    hash: (password, cost) =>
      admit(async () => {
        const salt = randomBytes(16);
        const { derived } = await run({ password, salt, length: 32, ...scryptCost(cost) });
        if (!derived) throw new Error('scrypt gave no hash');
        return formatHash(cost, salt, Buffer.from(derived));
      }),
    get pending() {
      return pending;
    },
    async close() {
      const thread = worker;
      worker = undefined;
      await thread?.terminate();
    },
  };
}
