import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DropStore } from './store.js';

export interface Spooled {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  remove(): Promise<void>;
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
