import type { BulkResponse } from '../../pipeline/batch.js';
import { WORK_FOLDER, type DropEntry, type DropStore } from '../stores/store.js';

/**
 * The durable state of every input of a drop, keyed by the sha256 of its bytes and kept in the
 * drop itself (`.warehouse-ingest/state/<sha256>.json`): where the data is, so it survives
 * restarts, every worker of the drop shares it, and moving a drop moves its history with it.
 * No embedded database: a store that can hold the files can hold their state, with the same
 * atomic whole-file writes (`DropStore.write`), and an operator can read it with `cat`.
 *
 *     received → validated → published → receipted
 *         ↘ failed (rejected: the input's fault; reprocessing may try again)
 *         ↘ retry-scheduled (transient failure or reprocessing; `nextAttemptAt`)
 *         ↘ dead (gave up after `retry.maxAttempts` attempts; terminal)
 *
 * `attempts` counts tries that could be the input's fault: rejections, unexpected errors and
 * tries that never finished (a crash: the count is raised before work starts). A broker or
 * store outage is nobody's fault in the input: it defers the input without using an attempt.
 * Neither is a stop of the worker: an interrupted try is `retry-scheduled` (due at once) with
 * `resume`, its attempt given back, and the next try publishes only what is left.
 */
export const INPUT_STATUSES = [
  'received',
  'validated',
  'published',
  'receipted',
  'failed',
  'retry-scheduled',
  'dead',
] as const;
export type InputStatus = (typeof INPUT_STATUSES)[number];

/** The `202` body of an accepted input without its ids, which are kept beside the state (`idsName`). */
export type AcceptedSummary = Omit<BulkResponse, 'messageIds'>;

/** One try that did not succeed; the state keeps the last few. */
export interface InputFailure {
  at: string;
  attempt: number;
  reason: string;
  /**
   * `rejected`: the input's fault; `error`: unexpected; `unfinished`: the try never ended (crash);
   * `unavailable`: broker or store; `interrupted`: the worker stopped and released it (no attempt used).
   */
  kind: 'rejected' | 'error' | 'unfinished' | 'unavailable' | 'interrupted';
}

/**
 * How far an interrupted try got: its first `confirmed` records are confirmed by the broker and
 * their ids are the first `confirmed` lines of `idsName(sha256)`, written before this state.
 */
export interface ResumePoint {
  confirmed: number;
  /** The interrupted try's correlation id, carried on: every message of the input shares one. */
  correlationId: string;
}

export interface InputState {
  sha256: string;
  status: InputStatus;
  /** The name the input arrived under (the latest, when the same bytes arrived again). */
  file: string;
  pipeline?: string;
  /** Where the input is in the drop now; absent once deleted (`after.success: delete`). */
  location?: string;
  attempts: number;
  /** First seen, and the last change (ISO 8601, UTC). */
  receivedAt?: string;
  updatedAt?: string;
  /** Set once published; the message ids are in `idsName(sha256)`, one per line. */
  response?: AcceptedSummary;
  /** The latest receipt, and every receipt written for the input, oldest first. */
  receipt?: string;
  receipts?: string[];
  processedAt?: string;
  lastError?: string;
  failures?: InputFailure[];
  /** `retry-scheduled`: not before this time (ISO 8601). */
  nextAttemptAt?: string;
  /** Set while an interrupted try's confirmed records wait for the rest to be published. */
  resume?: ResumePoint;
  /** Broker or store outages in a row (they do not use attempts). */
  deferrals?: number;
  /** Where a settle in progress puts the input and its receipt (cleared once done): see `SettlePlan`. */
  settling?: SettlePlan;
  /** The worker that last changed the state. */
  worker?: string;
}

export const STATE_FOLDER = `${WORK_FOLDER}/state`;
export const KEPT_FAILURES = 10;

const stateName = (sha256: string) => `${STATE_FOLDER}/${sha256}.json`;
/** Where the message ids of an accepted input are kept, written before its state says `published`. */
export const idsName = (sha256: string) => `${STATE_FOLDER}/${sha256}.ids`;

/** Whether a try of these bytes started and never recorded its end (the worker crashed or was killed). */
export const unfinished = (state: InputState) =>
  state.status === 'received' || state.status === 'validated';
/** Whether these bytes were published: they are never published again. */
export const published = (state: InputState) =>
  (state.status === 'published' || state.status === 'receipted') && state.response !== undefined;

export async function readState(store: DropStore, sha256: string): Promise<InputState | undefined> {
  if (!(await store.stat(stateName(sha256)))) return undefined;
  return parseState(await readText(store, stateName(sha256)));
}

export async function writeState(store: DropStore, state: InputState): Promise<void> {
  await store.write(
    stateName(state.sha256),
    JSON.stringify({ ...state, updatedAt: new Date().toISOString() }),
  );
}

/** The state with one more failure noted (the last `KEPT_FAILURES` are kept). */
export function withFailure(state: InputState, failure: Omit<InputFailure, 'at'>): InputState {
  const failures = [...(state.failures ?? []), { at: new Date().toISOString(), ...failure }].slice(
    -KEPT_FAILURES,
  );
  return { ...state, failures, lastError: failure.reason };
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

/**
 * Where a settle puts the input and its receipt, decided before anything is written and kept in
 * the input's state (`settling`): a worker that dies between the receipt and the move leaves
 * the plan behind, and the next try carries out the same plan — one receipt, not a second one
 * beside it under a time-prefixed name.
 */
export interface SettlePlan {
  readonly success: boolean;
  /** `move`: the folder path; undefined otherwise (delete, keep). */
  readonly moveTo?: string;
  readonly receipt: string;
}

/** The statuses a reprocessing job may select (dead inputs never are). */
export const REPROCESS_STATUSES = ['failed', 'retry-scheduled'] as const;
export type ReprocessStatus = (typeof REPROCESS_STATUSES)[number];
