import type { z } from 'zod';
import type { ResolveSecret } from '../secret-ref.js';
import type { sftpSource } from './schema.js';
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path/posix';
import type { Readable } from 'node:stream';
import {
  SftpError,
  createConnection,
  type Session,
  type SftpConnectionOptions,
} from './session.js';
import { mkdirs, NO_SUCH_FILE, PERMISSION_DENIED, statusOf, writeDurably } from './calls.js';
import { renameFresh, renameUnlessTaken } from './rename.js';
import { guardedStream } from './stream.js';
import { DropUnavailable } from '../../errors.js';
import {
  assertSafeName,
  DEFAULT_TIMEOUT_MS,
  mapStreamErrors,
  type DropEntry,
  type DropStore,
} from '../store.js';
import { DropAccessDenied, DropMisconfigured } from '../../operator-errors.js';

export { SftpError } from './session.js';

export const NAME = 'sftp';

export interface SftpDropOptions extends SftpConnectionOptions {
  /** The drop folder on the server; relative paths start at the login directory. */
  path: string;
}

/**
 * The one mapping of this store's errors: a server that is not there (refused, reset, timed out,
 * the connection lost) is `DropUnavailable`; a refusal of a path (SFTP status 3) is
 * `DropAccessDenied`; anything else (a rejected host key, a failed call) the `SftpError` as it is.
 */
function sftpDropError(error: unknown): Error {
  if (!(error instanceof SftpError)) return error as Error;
  if (error.cause instanceof DropMisconfigured) return error.cause; // said by `list` itself
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
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
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
          if (statusOf(error) !== NO_SUCH_FILE && statusOf(error) !== 'ENOENT') throw error;
          if (!folder)
            throw new DropMisconfigured(
              'drop-folder-missing',
              `The drop folder ${where} does not exist`,
            );
          return [];
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

    /** Never replaces an existing target: see `renameUnlessTaken` (and `renameFresh`). */
    async rename(from, to, options) {
      const source = remote(from);
      const target = remote(to);
      return connection.use('rename', `${source} -> ${target}`, (session) =>
        options?.fresh
          ? renameFresh(session, source, target)
          : renameUnlessTaken(session, source, target),
      );
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
 * The store for a pipeline's `source: { type: sftp }` as configured: the options of the schema
 * (./schema.ts, each described once there) with their secrets read. The store's own options
 * differ from the schema only where config names a secret and the store needs its value.
 */
export function sftpDropFromSource(
  source: z.output<typeof sftpSource>,
  secret: ResolveSecret,
): DropStore {
  return createSftpDrop({
    host: source.host,
    port: source.port,
    username: source.username,
    path: source.path,
    timeoutMs: source.timeoutMs,
    ...(source.password ? { password: secret(source.password, 'source.password') } : {}),
    ...(source.privateKey ? { privateKey: secret(source.privateKey, 'source.privateKey') } : {}),
    ...(source.passphrase ? { passphrase: secret(source.passphrase, 'source.passphrase') } : {}),
    ...(source.hostKeyFingerprints ? { hostKeyFingerprints: [...source.hostKeyFingerprints] } : {}),
    ...(source.knownHosts
      ? { knownHosts: secret({ file: source.knownHosts }, 'source.knownHosts', false) }
      : {}),
  });
}
