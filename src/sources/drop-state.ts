import type { BulkResponse } from '../pipeline/ingest.js';
import { WORK_FOLDER, type DropStore } from './store.js';

/**
 * What the worker knows about one input (by its sha256), kept in the drop itself under
 * `.warehouse-ingest/state/`: where the data is, so it survives restarts and every worker of
 * the drop shares it. A file whose bytes were accepted once is never published again.
 */
/** The `202` body of an accepted input without its ids, which are kept beside the state (`idsName`). */
export type AcceptedSummary = Omit<BulkResponse, 'messageIds'>;

export interface InputState {
  sha256: string;
  /** `published`: the broker confirmed everything (receipt maybe not yet written); `receipted`: done. */
  status: 'published' | 'receipted' | 'failed';
  file: string;
  attempts: number;
  /** Set once published; the message ids are in `idsName(sha256)`, one per line. */
  response?: AcceptedSummary;
  receipt?: string;
  processedAt?: string;
  lastError?: string;
}

const stateName = (sha256: string) => `${WORK_FOLDER}/state/${sha256}.json`;
/** Where the message ids of an accepted input are kept, written before its state says `published`. */
export const idsName = (sha256: string) => `${WORK_FOLDER}/state/${sha256}.ids`;

export async function readState(store: DropStore, sha256: string): Promise<InputState | undefined> {
  if (!(await store.stat(stateName(sha256)))) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of await store.read(stateName(sha256))) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as InputState;
  } catch {
    return undefined; // a torn state file is treated as none: the input is validated again
  }
}

export async function writeState(store: DropStore, state: InputState): Promise<void> {
  await store.write(stateName(state.sha256), JSON.stringify(state));
}
