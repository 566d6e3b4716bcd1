import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DropStore } from './stores/store.js';

export interface Spooled {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  remove(): Promise<void>;
}

/**
 * Names this process's work folders (`<host>~<pid>~<id>`), so that a later worker can tell a
 * dead worker's from a live one's.
 */
export const SPOOL_OWNER = `${hostname()}~${process.pid}~`;
const swept = new Map<string, Promise<void>>();

/**
 * Removes work folders (spooled copies, id lists, receipts being composed) left by workers on
 * this host that died mid-file (SIGKILL, OOM killer): nothing else ever would, and each copy is
 * as large as its input (up to gigabytes). Those of live processes, and of other hosts sharing
 * the folder, are left alone. Once per folder and process; best effort, never fails a file.
 */
export function sweepAbandoned(directory: string): Promise<void> {
  if (!swept.has(directory)) {
    const sweeping = (async () => {
      for (const name of await readdir(directory).catch(() => [] as string[])) {
        const match = /^(.+)~(\d+)~/.exec(name);
        if (!match || match[1] !== hostname() || isAlive(Number(match[2]))) continue;
        await rm(path.join(directory, name), { recursive: true, force: true });
      }
    })().catch(() => undefined);
    swept.set(directory, sweeping);
  }
  return swept.get(directory)!;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** The SHA-256 of a file in the drop (its identity, as `spool` computes it), read in bounded memory. */
export async function sha256Of(store: DropStore, name: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of await store.read(name)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Copies a file from the drop to local disk, hashing it on the way, in bounded memory. The
 * pipeline reads a CSV twice (validate, publish) and a remote stream cannot be read twice; the
 * hash is the file's identity for duplicate detection.
 */
export async function spool(store: DropStore, name: string, directory: string): Promise<Spooled> {
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, `${Date.now()}-${randomBytes(6).toString('hex')}.spool`);
  const hash = createHash('sha256');
  let size = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(await store.read(name), tap, createWriteStream(file));
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  return { path: file, size, sha256: hash.digest('hex'), remove: () => rm(file, { force: true }) };
}
