import { Readable } from 'node:stream';
import { SftpError, type Session } from './session.js';

/**
 * Wraps a read stream so that a consumer waiting for bytes waits at most `timeoutMs` per chunk
 * (not for the whole file: a slow consumer is not a slow server), and so that a lost
 * connection ends it with an error instead of leaving it pending.
 */
export function guardedStream(
  source: Readable,
  session: Session,
  timeoutMs: number,
  describe: string,
): Readable {
  let timer: NodeJS.Timeout | undefined;
  const disarm = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const onLost = () => out.destroy(session.signal.reason as Error);
  const out = new Readable({
    read() {
      timer ??= setTimeout(() => {
        const error = new SftpError(
          'sftp-timeout',
          `SFTP read ${describe}: no data for ${timeoutMs} ms; the connection is dropped and re-opened on the next call`,
        );
        session.destroy(error);
        out.destroy(error);
      }, timeoutMs);
      source.resume();
    },
    destroy(error, callback) {
      disarm();
      session.signal.removeEventListener('abort', onLost);
      source.destroy();
      callback(error);
    },
  });
  session.signal.addEventListener('abort', onLost, { once: true });
  source.on('data', (chunk: Buffer) => {
    disarm();
    if (!out.push(chunk)) source.pause();
  });
  source.once('end', () => {
    disarm();
    out.push(null);
  });
  // `on`, not `once`: ssh2's stream emits errors directly, also after a first one or after destroy().
  source.on('error', (error) =>
    out.destroy(
      new SftpError('sftp-failed', `SFTP read ${describe} failed: ${error.message}`, error),
    ),
  );
  return out;
}
