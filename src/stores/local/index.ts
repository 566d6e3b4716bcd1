import type { z } from 'zod';
import type { localSource } from './schema.js';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, lstat, mkdir, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { watch } from 'chokidar';
import { DropUnavailable } from '../../errors.js';
import { assertSafeName, mapStreamErrors, type DropEntry, type DropStore } from '../store.js';
import { DropAccessDenied, DropMisconfigured } from '../../operator-errors.js';

export const NAME = 'local';

export interface LocalDropOptions {
  /** The drop folder. Relative paths are taken from the working directory. */
  path: string;
  /**
   * Watch the folder by polling it rather than by the kernel's file events, which network mounts
   * (NFS, SMB, most FUSE) do not deliver for changes made by other machines.
   * @default false
   */
  usePolling?: boolean;
  /** How often a polling watch looks (`usePolling`). @default 1000 */
  pollingIntervalMs?: number;
  /** Offer `watch` (chokidar) so the runner looks as soon as a file appears. @default true */
  watch?: boolean;
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

/**
 * Why link(2) may refuse a file that rename(2) would move: `fs.protected_hardlinks=1` (Linux's
 * default) lets only a file's owner (or a holder of write access to it) link it, so a worker
 * running as another user than the partner's upload (0644) gets EPERM; some filesystems (FAT,
 * several FUSE and SMB mounts) have no hard links at all.
 */
const LINK_REFUSED = new Set(['EPERM', 'EOPNOTSUPP', 'ENOTSUP', 'ENOSYS']);

/**
 * Moves `source` to `target` by rename(2): for names nobody else makes (claims, `fresh`), and
 * when no link can be made. rename(2) is atomic — a kill -9 never leaves the file under both
 * names, as link + unlink can — and of two workers renaming the same file exactly one succeeds
 * (the other gets ENOENT). What it does not give is "never overwrite": it replaces an existing
 * target, so the target is looked at first. Between the look and the rename nothing of ours can
 * appear there — claim names carry this worker's id and the time, names in processed/ and failed/
 * are chosen after a look of their own, and two workers never hold the same claim — so only a
 * partner's upload under a released file's own name in that same instant could be replaced: the
 * window OpenSSH's own rename accepts on filesystems without links.
 */
async function renameUnlessTaken(source: string, target: string): Promise<boolean> {
  const taken = await lstat(target).then(
    () => true,
    (error: unknown) => {
      if (isMissing(error)) return false;
      throw error;
    },
  );
  if (taken) return false;
  try {
    await rename(source, target);
    return true;
  } catch (error) {
    if (isMissing(error)) return false; // another worker renamed it first
    throw error;
  }
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
        const code = (error as NodeJS.ErrnoException).code;
        if (!folder && (code === 'ENOENT' || code === 'ENOTDIR'))
          throw code === 'ENOENT'
            ? new DropMisconfigured('drop-folder-missing', `The drop folder ${root} does not exist`)
            : new DropMisconfigured('drop-not-a-folder', `The drop folder ${root} is not a folder`);
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

    async rename(from, to, options) {
      const source = full(from);
      const target = full(to);
      await mkdir(path.dirname(target), { recursive: true });
      if (options?.fresh) return renameUnlessTaken(source, target);
      // link + unlink instead of rename: link refuses an existing target, so nothing is ever
      // overwritten, and of two workers racing for one file exactly one unlinks the source.
      try {
        await link(source, target);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EEXIST') return false;
        if (code !== undefined && LINK_REFUSED.has(code)) return renameUnlessTaken(source, target);
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
  const watchFolder: NonNullable<DropStore['watch']> = ({ ignore, onAppear, onError }) => {
    const skip = new Set(ignore);
    const watcher = watch(root, {
      depth: 0, // the top level only: inputs are never in subfolders
      ignoreInitial: true,
      usePolling: options.usePolling ?? false,
      interval: options.pollingIntervalMs ?? 1_000,
      // Never into the worker's own folders or hidden ones; nothing below the top level.
      ignored: (file) => {
        const relative = path.relative(root, file);
        if (relative === '') return false;
        const first = relative.split(path.sep)[0]!;
        return relative.includes(path.sep) || first.startsWith('.') || skip.has(first);
      },
    });
    watcher.on('add', () => onAppear());
    watcher.on('error', (error) => onError(error as Error));
    return { close: () => watcher.close() };
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
    ...(options.watch === false ? {} : { watch: watchFolder }),
  };
}

/**
 * The store for a pipeline's `source: { type: local }` as configured: the options of the schema
 * (./schema.ts, each described once there); a local folder needs no secret.
 */
export function localDropFromSource(source: z.output<typeof localSource>): DropStore {
  return createLocalDrop({
    path: source.path,
    watch: source.watch.enabled,
    usePolling: source.watch.usePolling,
    pollingIntervalMs: source.watch.pollingIntervalMs,
  });
}
