import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DropStore } from '../stores/store.js';

export interface Spooled {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  remove(): Promise<void>;
}

/**
 * When a process started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`); undefined
 * where there is no such file (not Linux, or no such process).
 */
function startTicks(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 (state) on.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const OWN_START = startTicks('self');

/**
 * Names this process's work folders (`<host>~<pid>.<start ticks>~<id>`), so that a later worker
 * can tell a dead worker's from a live one's. The start time matters in containers: a restarted
 * container runs the service as the same pid (often 1) under the same host name, so a pid alone
 * would call the dead process's folders live and keep them for ever.
 */
export const SPOOL_OWNER = `${hostname()}~${process.pid}${OWN_START === undefined ? '' : `.${OWN_START}`}~`;
const swept = new Map<string, Promise<void>>();

/**
 * Removes work folders (spooled copies, id lists, receipts being composed, records waiting to be
 * published) left by processes on this host that died mid-file (SIGKILL, OOM killer): nothing
 * else ever would, and each can be as large as its input or larger. Those of live processes, and
 * of other hosts sharing the folder, are left alone. Once per folder and process; best effort,
 * never fails a file.
 */
export function sweepAbandoned(directory: string): Promise<void> {
  if (!swept.has(directory)) {
    const sweeping = (async () => {
      for (const name of await readdir(directory).catch(() => [] as string[])) {
        const match = /^(.+)~(\d+)(?:\.(\d+))?~/.exec(name);
        if (!match || match[1] !== hostname() || isAlive(Number(match[2]), match[3])) continue;
        await rm(path.join(directory, name), { recursive: true, force: true });
      }
    })().catch(() => undefined);
    swept.set(directory, sweeping);
  }
  return swept.get(directory)!;
}

/** Whether the process that made a name still runs: its pid exists and, when named, started when it did. */
function isAlive(pid: number, started: string | undefined): boolean {
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: exists, another user's
  }
  if (started === undefined) return true; // a name without a start time: the pid is all there is
  const now = startTicks(pid);
  return now === undefined || now === started;
}

/** The SHA-256 of a file in the drop (its identity, as `spool` computes it), read in bounded memory. */
export async function sha256Of(store: DropStore, name: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of await store.read(name)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Copies a file from the drop to local disk, hashing it on the way, in bounded memory. The hash
 * (the file's identity: was it done before?) is needed before the file is decoded, and a remote
 * stream cannot be read twice.
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
