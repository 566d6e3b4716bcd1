import { WORK_FOLDER, type DropEntry, type DropStore } from '../stores/store.js';
import type { InputState } from './input-state.js';

/**
 * Where input states live and how they are read and written: one JSON file per input under
 * `.warehouse-ingest/state/`, its message ids beside it (see `InputState`).
 */
export const STATE_FOLDER = `${WORK_FOLDER}/state`;

const stateName = (sha256: string) => `${STATE_FOLDER}/${sha256}.json`;
/** Where the message ids of an accepted input are kept, written before its state says `published`. */
export const idsName = (sha256: string) => `${STATE_FOLDER}/${sha256}.ids`;

export async function readState(store: DropStore, sha256: string): Promise<InputState | undefined> {
  if (!(await store.stat(stateName(sha256)))) return undefined;
  return parseState(await readText(store, stateName(sha256)));
}

/** Writes `state` whole (atomically, see `DropStore.write`); returns it as written (with `updatedAt`). */
export async function writeState(store: DropStore, state: InputState): Promise<InputState> {
  const written = { ...state, updatedAt: new Date().toISOString() };
  await store.write(stateName(state.sha256), JSON.stringify(written));
  return written;
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
    return typeof state?.sha256 === 'string' && typeof state.status === 'string'
      ? state
      : undefined;
  } catch {
    return undefined; // a torn or foreign file is treated as no state: the input is validated again
  }
}
