import path from 'node:path/posix';
import { messageOf, type Sftp } from './session.js';

/** SFTP status codes the store tells apart (draft-ietf-secsh-filexfer-02, the version OpenSSH speaks). */
export const NO_SUCH_FILE = 2;
export const FAILURE = 4; // also what OpenSSH answers for EEXIST: v3 has no "file exists" code
export const PERMISSION_DENIED = 3;

export const statusOf = (error: unknown) => (error as { code?: unknown } | undefined)?.code;

/**
 * mkdir -p, from the deepest folder up only as far as needed. Not the client's recursive mkdir:
 * it checks then creates, so two concurrent calls for one folder make one of them fail.
 */
export async function mkdirs(sftp: Sftp, dir: string, parentsMade = false): Promise<void> {
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
export async function writeDurably(
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

export class Unsupported extends Error {}

/** Promisifies one raw ssh2 SFTP call; a request the server lacks (ssh2 throws) becomes `Unsupported`. */
export function call<T>(
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
