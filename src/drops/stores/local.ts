import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, mkdir, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DropUnavailable } from '../../errors.js';
import {
  assertSafeName,
  DropAccessDenied,
  mapStreamErrors,
  type DropEntry,
  type DropStore,
} from './store.js';

export const NAME = 'local';

export interface LocalDropOptions {
  /** The drop folder. Relative paths are taken from the working directory. */
  path: string;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Errors of a mount that went away (NFS, SMB, FUSE): the folder may come back. */
const UNAVAILABLE = new Set([
  'ENOTCONN',
  'ESTALE',
  'ETIMEDOUT',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'ENETDOWN',
  'ENETUNREACH',
  'ECONNREFUSED',
  'ECONNRESET',
]);
const DENIED = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The one mapping of this store's file-system errors: an outage, a refusal, or the error as it is (ours). */
function localDropError(error: unknown, what: string, root: string): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const reason = (error as Error | undefined)?.message ?? String(error);
  if (code !== undefined && UNAVAILABLE.has(code))
    return new DropUnavailable(
      `The drop folder ${root} is not reachable (${what}): ${reason}`,
      error,
    );
  if (code !== undefined && DENIED.has(code))
    return new DropAccessDenied(`The drop folder ${root} refused ${what}: ${reason}`, error);
  return error;
}

/** A drop in a local (or mounted) folder. Renames are atomic on one filesystem. */
export function createLocalDrop(options: LocalDropOptions): DropStore {
  const root = path.resolve(options.path);
  const full = (name: string) => {
    assertSafeName(name);
    return path.join(root, name);
  };

  /** `file` is the path on disk; listing passes names straight from readdir (reported as they are, refused per file later). */
  async function entry(name: string, file = full(name)): Promise<DropEntry | undefined> {
    try {
      const facts = await stat(file);
      return facts.isFile() ? { name, size: facts.size, modifiedMs: facts.mtimeMs } : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  const store: DropStore = {
    type: NAME,
    where: root,
    atomicRename: true,

    async list(folder = '') {
      let names: string[];
      try {
        names = (await readdir(folder ? full(folder) : root, { withFileTypes: true }))
          .filter((d) => d.isFile())
          .map((d) => d.name);
      } catch (error) {
        if (isMissing(error)) return [];
        throw error;
      }
      const folderPath = folder ? full(folder) : root;
      const entries = await Promise.all(
        names
          .sort()
          .map((name) => entry(folder ? `${folder}/${name}` : name, path.join(folderPath, name))),
      );
      return entries.filter((e): e is DropEntry => e !== undefined);
    },

    stat: (name) => entry(name),

    async read(name): Promise<Readable> {
      const file = full(name);
      const stream = createReadStream(file);
      await new Promise<void>((resolve, reject) => {
        stream.once('open', () => resolve());
        stream.once('error', reject);
      });
      return stream;
    },

    async rename(from, to) {
      const source = full(from);
      const target = full(to);
      await mkdir(path.dirname(target), { recursive: true });
      // link + unlink instead of rename: link refuses an existing target, so nothing is ever
      // overwritten, and of two workers racing for one file exactly one unlinks the source.
      try {
        await link(source, target);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EEXIST') return false;
        throw error;
      }
      try {
        await unlink(source);
        return true;
      } catch (error) {
        await unlink(target).catch(() => undefined);
        if (isMissing(error)) return false;
        throw error;
      }
    },

    async write(name, content) {
      const target = full(name);
      await mkdir(path.dirname(target), { recursive: true });
      const temporary = `${target}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        if (typeof content === 'object' && 'file' in content)
          await pipeline(
            createReadStream(content.file),
            createWriteStream(temporary, { flush: true }),
          );
        else await writeFile(temporary, content, { flush: true });
        await rename(temporary, target);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
    },

    async remove(name) {
      try {
        await unlink(full(name));
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    },

    async close() {},
  };
  const mapped =
    <A extends unknown[], T>(what: string, fn: (...args: A) => Promise<T>) =>
    async (...args: A): Promise<T> => {
      try {
        return await fn(...args);
      } catch (error) {
        throw localDropError(error, `${what} ${String(args[0] ?? '')}`.trim(), root);
      }
    };
  return {
    ...store,
    list: mapped('list', store.list),
    stat: mapped('stat', store.stat),
    read: mapped('read', async (name: string) =>
      mapStreamErrors(
        await store.read(name),
        (error) => localDropError(error, `read ${name}`, root) as Error,
      ),
    ),
    rename: mapped('rename', store.rename),
    write: mapped('write', store.write),
    remove: mapped('remove', store.remove),
  };
}
