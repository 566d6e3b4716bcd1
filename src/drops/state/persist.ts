import { randomBytes } from 'node:crypto';
import { DropUnavailable } from '../../errors.js';
import { WORK_FOLDER, type DropEntry, type DropStore } from '../../stores/store.js';
import type { InputState } from './input-state.js';

/**
 * Where input states live and how they are read and written: one JSON file per input under
 * `.warehouse-ingest/state/`, its message ids beside it (see `InputState`).
 */
export const STATE_FOLDER = `${WORK_FOLDER}/state`;

const stateName = (sha256: string) => `${STATE_FOLDER}/${sha256}.json`;
/** Where the message ids of an accepted input are kept, written before its state says `published`. */
export const idsName = (sha256: string) => `${STATE_FOLDER}/${sha256}.ids`;
/** Held by the one writer of an input's state for the time of a compare-and-set. */
const lockName = (sha256: string) => `${STATE_FOLDER}/${sha256}.lock`;

/**
 * A lock older than this is a crashed writer's and is broken. A write holds it for one read and
 * one write of a small file; a live writer that stalls longer than this between the two may
 * still overwrite a newer state (the one window left: see docs/delivery-guarantee.md).
 */
export const STATE_LOCK_STALE_MS = 10_000;

/**
 * A state write refused because the state in the drop is no longer the one the writer read:
 * another worker changed it (it took the file over). The writer must stop: its view is stale,
 * and writing on would put the input's state backwards.
 */
export class StaleState extends Error {
  override readonly name = 'StaleState';
  constructor(
    readonly sha256: string,
    why: string,
  ) {
    super(
      `The state of input ${sha256.slice(0, 12)}… ${why}: another worker changed it; this worker stops`,
    );
  }
}

export async function readState(store: DropStore, sha256: string): Promise<InputState | undefined> {
  if (!(await store.stat(stateName(sha256)))) return undefined;
  return parseState(await readText(store, stateName(sha256)));
}

/**
 * Writes `state` whole (atomically, see `DropStore.write`) if the state in the drop is still the
 * one `state` follows (`version`, 0 for none): a compare-and-set, so that states never go
 * backwards. Throws `StaleState` otherwise. Returns the state as written (`version` + 1, `updatedAt`).
 *
 * Stores with an atomic, never-overwriting rename (local, SFTP) hold a per-input lock file for the
 * compare and the write. S3 has no such rename: there the version is read just before the write,
 * which leaves the time of one request for another writer to slip in between — the drop lease
 * already makes one worker at a time the only writer there.
 */
export async function writeState(store: DropStore, state: InputState): Promise<InputState> {
  const expected = state.version ?? 0;
  const written: InputState = {
    ...state,
    version: expected + 1,
    updatedAt: new Date().toISOString(),
  };
  const compareAndWrite = async () => {
    const found = (await readState(store, state.sha256))?.version ?? 0;
    if (found !== expected)
      throw new StaleState(state.sha256, `is at version ${found}, not ${expected}`);
    await store.write(stateName(state.sha256), JSON.stringify(written));
  };
  if (!store.atomicRename) await compareAndWrite();
  else await withLock(store, state.sha256, compareAndWrite);
  return written;
}

/**
 * Locks this process took and could not remove (the store went away in between), by store and
 * lock name, with their tokens. The next write of the same input removes such a lock first
 * (it is provably this process's: it holds its token) instead of waiting for it to go stale.
 */
const strandedLocks = new WeakMap<DropStore, Map<string, string>>();

/**
 * Runs `fn` holding the input's state lock: a small file made under a temporary name and renamed
 * into place, which succeeds for one writer only (a rename never overwrites). A busy lock is
 * waited for; one older than `STATE_LOCK_STALE_MS` is broken.
 */
async function withLock(store: DropStore, sha256: string, fn: () => Promise<void>): Promise<void> {
  const lock = lockName(sha256);
  let stranded = strandedLocks.get(store);
  if (!stranded) strandedLocks.set(store, (stranded = new Map()));
  const left = stranded.get(lock);
  if (left !== undefined) {
    await releaseLock(store, lock, left);
    stranded.delete(lock);
  }
  const token = randomBytes(8).toString('hex');
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    const temporary = `${lock}.${randomBytes(4).toString('hex')}.tmp`;
    await store.write(temporary, JSON.stringify({ token, at: Date.now() }));
    if (await store.rename(temporary, lock)) break;
    await store.remove(temporary);
    await breakIfStale(store, lock);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  const release = async () => {
    try {
      return await releaseLock(store, lock, token);
    } catch (error) {
      stranded.set(lock, token);
      throw error;
    }
  };
  try {
    await fn();
  } catch (error) {
    await release().catch(() => undefined);
    throw error;
  }
  if (!(await release()))
    throw new StaleState(sha256, 'had its lock broken while this worker wrote it');
}

/** Removes the lock only while it is still `token`'s: a lock broken as stale may be another's now. */
async function releaseLock(store: DropStore, lock: string, token: string): Promise<boolean> {
  const held = await readText(store, lock).catch((error: unknown) => {
    if (error instanceof DropUnavailable) throw error; // the store is down: it may still be there
    return ''; // gone: broken as stale, and perhaps removed by now
  });
  const mine = held.includes(token);
  if (mine) await store.remove(lock);
  return mine;
}

/** Breaks a crashed writer's lock: renamed aside first, so of two breakers one removes it. */
async function breakIfStale(store: DropStore, lock: string): Promise<void> {
  const held = await readText(store, lock).catch(() => undefined);
  if (held === undefined) return; // released meanwhile
  const at = (() => {
    try {
      return Number((JSON.parse(held) as { at?: unknown }).at);
    } catch {
      return Number.NaN; // torn: a writer died while making it
    }
  })();
  if (Date.now() - at < STATE_LOCK_STALE_MS) return;
  const aside = `${lock}.${randomBytes(4).toString('hex')}.tmp`;
  if (await store.rename(lock, aside)) await store.remove(aside);
}

/**
 * Every input state of a drop. `since`: only states changed since then (by the store's
 * modification time: a cheap filter that reads nothing else). Unreadable states are skipped.
 */
export async function listStates(
  store: DropStore,
  options: { since?: number } = {},
): Promise<InputState[]> {
  const entries = (await store.list(STATE_FOLDER)).filter(
    (e) => e.name.endsWith('.json') && e.modifiedMs >= (options.since ?? 0),
  );
  return listStatesIn(store, entries);
}

/** The states in these entries of the state folder; unreadable ones are skipped. */
export async function listStatesIn(
  store: DropStore,
  entries: readonly DropEntry[],
): Promise<InputState[]> {
  const states: InputState[] = [];
  // A few reads at once: SFTP and S3 answer each in a round trip.
  for (let i = 0; i < entries.length; i += 16) {
    const read = await Promise.all(
      entries
        .slice(i, i + 16)
        .map(async (e) => parseState(await readText(store, e.name).catch(() => ''))),
    );
    for (const state of read) if (state) states.push(state);
  }
  return states;
}

async function readText(store: DropStore, name: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.read(name)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseState(text: string): InputState | undefined {
  try {
    const state = JSON.parse(text) as InputState;
    if (typeof state?.sha256 !== 'string' || typeof state.status !== 'string') return undefined;
    // Written before the status was renamed (vocabulary.ts): the same status, its old word.
    if ((state.status as string) === 'validated') return { ...state, status: 'publishing' };
    return state;
  } catch {
    return undefined; // a torn or foreign file is treated as no state: the input is validated again
  }
}
