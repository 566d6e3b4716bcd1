import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path/posix';
import type { Readable } from 'node:stream';
import {
  SftpError,
  createConnection,
  guardedStream,
  messageOf,
  type Session,
  type Sftp,
  type SftpConnectionOptions,
} from './sftp-session.js';
import { DropUnavailable } from '../../errors.js';
import {
  assertSafeName,
  DropAccessDenied,
  mapStreamErrors,
  type DropEntry,
  type DropStore,
} from './store.js';

export { SftpError } from './sftp-session.js';

export const NAME = 'sftp';

export interface SftpDropOptions extends SftpConnectionOptions {
  /** The drop folder on the server; relative paths start at the login directory. */
  path: string;
}

/** SFTP status codes (draft-ietf-secsh-filexfer-02, the version OpenSSH speaks). */
const NO_SUCH_FILE = 2;
const FAILURE = 4; // also what OpenSSH answers for EEXIST: v3 has no "file exists" code

const PERMISSION_DENIED = 3;

const statusOf = (error: unknown) => (error as { code?: unknown } | undefined)?.code;

/**
 * The one mapping of this store's errors: a server that is not there (refused, reset, timed out,
 * the connection lost) is `DropUnavailable`; a refusal of a path (SFTP status 3) is
 * `DropAccessDenied`; anything else (a rejected host key, a failed call) the `SftpError` as it is.
 */
function sftpDropError(error: unknown): Error {
  if (!(error instanceof SftpError)) return error as Error;
  if (
    error.code === 'sftp-unreachable' ||
    error.code === 'sftp-timeout' ||
    error.code === 'sftp-connection-lost'
  )
    return new DropUnavailable(error.message, error);
  const status = statusOf(error.cause);
  if (status === PERMISSION_DENIED || status === 'EACCES' || status === 'EPERM')
    return new DropAccessDenied(error.message, error);
  return error;
}

/**
 * A drop in a folder on an SFTP server: one connection, opened on first use, re-opened after it
 * drops. Renames never overwrite (hard link + unlink, see `rename`), writes are atomic
 * (temporary name + posix-rename).
 */
export function createSftpDrop(options: SftpDropOptions): DropStore {
  const port = options.port ?? 22;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const root = options.path === '/' ? '/' : options.path.replace(/\/+$/, '') || '.';
  const where = `sftp://${options.username}@${options.host}:${port}${root.startsWith('/') ? '' : '/~/'}${root}`;
  const raw = createConnection(
    { ...options, port, timeoutMs, readyTimeoutMs: options.readyTimeoutMs ?? 10_000 },
    where,
  );
  /** Every call goes through here: its errors are mapped once (`sftpDropError`). */
  const connection: Pick<typeof raw, 'use' | 'close'> = {
    use: (what, remotePath, fn) =>
      raw.use(what, remotePath, fn).catch((error: unknown) => {
        throw sftpDropError(error);
      }),
    close: () => raw.close(),
  };
  const remote = (name: string) => {
    assertSafeName(name);
    return path.join(root, name);
  };

  async function entry(
    client: Session['client'],
    name: string,
    file: string,
  ): Promise<DropEntry | undefined> {
    try {
      const facts = await client.stat(file);
      return facts.isFile ? { name, size: facts.size, modifiedMs: facts.modifyTime } : undefined;
    } catch (error) {
      if (statusOf(error) === 'ENOENT') return undefined; // the client maps "no such file" to ENOENT here
      throw error;
    }
  }

  return {
    type: NAME,
    where,
    atomicRename: true,

    async list(folder = '') {
      const dir = folder ? remote(folder) : root;
      return connection.use('list', dir, async ({ client }) => {
        try {
          const files = await client.list(dir, (item) => item.type === '-');
          return files
            .map((f) => ({
              name: folder ? `${folder}/${f.name}` : f.name,
              size: f.size,
              modifiedMs: f.modifyTime,
            }))
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        } catch (error) {
          if (statusOf(error) === NO_SUCH_FILE) return [];
          throw error;
        }
      });
    },

    async stat(name) {
      const file = remote(name);
      return connection.use('stat', file, ({ client }) => entry(client, name, file));
    },

    async read(name): Promise<Readable> {
      const file = remote(name);
      return connection.use('read', file, async (session) => {
        const source = session.client.createReadStream(file);
        // Opened (or refused) before the stream is handed out, like a local read.
        await new Promise<void>((resolve, reject) => {
          source.once('open', () => resolve());
          source.on('error', reject); // stays: later errors of a refused stream are no one's to handle
        }).catch((error: unknown) => {
          source.destroy();
          throw error;
        });
        return mapStreamErrors(
          guardedStream(source, session, timeoutMs, `${file} on ${where}`),
          sftpDropError,
        );
      });
    },

    /**
     * A hard link (`hardlink@openssh.com`) then unlink of the source, like the local drop: link(2)
     * never replaces an existing target, and of two workers racing for one file exactly one
     * unlinks the source. Plain SFTP rename is the fallback for servers without the extension:
     * OpenSSH implements it the same way, but the protocol lets other servers overwrite.
     */
    async rename(from, to) {
      const source = remote(from);
      const target = remote(to);
      return connection.use('rename', `${source} -> ${target}`, async ({ client, sftp }) => {
        await mkdirs(sftp, path.dirname(target));
        try {
          await call<void>((cb) => sftp.ext_openssh_hardlink(source, target, cb));
        } catch (error) {
          if (!(error instanceof Unsupported)) return lostRace(error, client, target);
          try {
            await call<void>((cb) => sftp.rename(source, target, cb));
            return true;
          } catch (renameError) {
            return lostRace(renameError, client, target);
          }
        }
        try {
          await call<void>((cb) => sftp.unlink(source, cb));
          return true;
        } catch (error) {
          await call<void>((cb) => sftp.unlink(target, cb)).catch(() => undefined);
          if (statusOf(error) === NO_SUCH_FILE) return false; // another worker took it meanwhile
          throw error;
        }
      });
    },

    async write(name, content) {
      const target = remote(name);
      const temporary = `${target}.${randomBytes(4).toString('hex')}.tmp`;
      await connection.use('write', target, async ({ client, sftp }) => {
        await mkdirs(sftp, path.dirname(target));
        try {
          await writeDurably(
            sftp,
            temporary,
            typeof content === 'object' && 'file' in content
              ? createReadStream(content.file, { highWaterMark: 256 * 1024 })
              : [Buffer.from(content)],
          );
          await client.posixRename(temporary, target); // atomic, replaces an earlier version
        } catch (error) {
          await client.delete(temporary, true).catch(() => undefined);
          throw error;
        }
      });
    },

    async remove(name) {
      const file = remote(name);
      await connection.use('remove', file, ({ client }) => client.delete(file, true));
    },

    close: () => connection.close(),
  };
}

/**
 * Whether a refused link/rename lost a race — the source is gone or the target exists — rather
 * than failed. SFTP v3 has no "already exists" status: OpenSSH answers FAILURE, so look.
 */
async function lostRace(
  error: unknown,
  client: Session['client'],
  target: string,
): Promise<boolean> {
  if (statusOf(error) === NO_SUCH_FILE) return false;
  if (statusOf(error) === FAILURE && (await client.exists(target)) !== false) return false;
  throw error;
}

/**
 * mkdir -p, from the deepest folder up only as far as needed. Not the client's recursive mkdir:
 * it checks then creates, so two concurrent calls for one folder make one of them fail.
 */
async function mkdirs(sftp: Sftp, dir: string, parentsMade = false): Promise<void> {
  if (dir === '.' || dir === '/') return;
  try {
    await call<void>((cb) => sftp.mkdir(dir, cb));
  } catch (error) {
    if (statusOf(error) === NO_SUCH_FILE && !parentsMade) {
      await mkdirs(sftp, path.dirname(dir));
      return mkdirs(sftp, dir, true);
    }
    const facts = await call<{ isDirectory(): boolean }>((cb) => sftp.stat(dir, cb)).catch(
      () => undefined,
    );
    if (!facts?.isDirectory())
      throw new Error(`Could not create folder ${dir}: ${messageOf(error)}`, { cause: error });
  }
}

/** Writes a whole file and, where the server offers `fsync@openssh.com`, flushes it to disk (as the local drop does). */
async function writeDurably(
  sftp: Sftp,
  file: string,
  chunks: AsyncIterable<Buffer> | Iterable<Buffer>,
): Promise<void> {
  const handle = await call<Buffer>((cb) => sftp.open(file, 'w', cb));
  let written = false;
  try {
    let offset = 0;
    for await (const data of chunks) {
      if (data.length > 0)
        await call<void>((cb) => sftp.write(handle, data, 0, data.length, offset, cb)); // ssh2 splits large writes
      offset += data.length;
    }
    await call<void>((cb) => sftp.ext_openssh_fsync(handle, cb)).catch((error: unknown) => {
      if (!(error instanceof Unsupported)) throw error;
    });
    written = true;
  } finally {
    const closing = call<void>((cb) => sftp.close(handle, cb));
    await (written ? closing : closing.catch(() => undefined)); // a failed close must not hide why the write failed
  }
}

class Unsupported extends Error {}

/** Promisifies one raw ssh2 SFTP call; a request the server lacks (ssh2 throws) becomes `Unsupported`. */
function call<T>(
  start: (cb: (error: Error | null | undefined, value?: T) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    try {
      start((error, value) => (error ? reject(error) : resolve(value as T)));
    } catch (error) {
      reject(/does not support/.test(messageOf(error)) ? new Unsupported(messageOf(error)) : error);
    }
  });
}
