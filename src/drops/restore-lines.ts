import { rename, truncate } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { spool } from './spool.js';
import type { DropStore } from './stores/store.js';

/**
 * Brings back what an interrupted try kept in the drop (its id list, its lineage) so the try that
 * resumes it appends to it: the first `lines` lines of `name` are copied to the local `target`.
 * False when the drop's copy is missing or holds fewer lines (the caller then starts over).
 * More lines (a crash between writing the list and the state): only those the state vouches for are kept.
 */
export async function restoreLines(
  store: DropStore,
  name: string,
  work: string,
  target: string,
  lines: number,
): Promise<boolean> {
  const copy = await spool(store, name, work).catch(() => undefined);
  const length = copy ? await lengthOfLines(copy.path, lines) : undefined;
  if (!copy || length === undefined) return false;
  await truncate(copy.path, length);
  await rename(copy.path, target);
  return true;
}

/**
 * The length in bytes of the first `lines` lines of a file (an id list), read in bounded memory;
 * undefined when it holds fewer.
 */
async function lengthOfLines(path: string, lines: number): Promise<number | undefined> {
  if (lines === 0) return 0;
  let seen = 0;
  let offset = 0;
  for await (const chunk of createReadStream(path)) {
    const bytes = chunk as Buffer;
    for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) {
      if (++seen === lines) return offset + at + 1;
    }
    offset += bytes.length;
  }
  return undefined;
}
