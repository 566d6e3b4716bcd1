import net from 'node:net';
import type SftpClient from 'ssh2-sftp-client';
import { fingerprintOf, type HostKeyPolicy, hostKeyPolicy } from './host-keys.js';

/**
 * The SFTP connection under `createSftpDrop`: opened lazily, verified against pinned host keys,
 * re-opened after it drops, and every call bounded by a timeout. ssh2-sftp-client 12 has no
 * retries of its own, and some server failures leave its promises pending for good (a close
 * seen by one call is swallowed for the others; `end()` after a reset), so this module never
 * waits on the library alone: it races each call against a timer and the connection's end, and
 * tears the socket down itself (it owns the socket).
 */

export type Sftp = Awaited<ReturnType<SftpClient['connect']>>;

export interface Session {
  readonly client: SftpClient;
  /** The raw ssh2 SFTP channel, for what the client does not wrap (hard links, plain mkdir). */
  readonly sftp: Sftp;
  /** Aborted, with an `SftpError` as reason, when the connection is gone. */
  readonly signal: AbortSignal;
  /** Drops the connection at once (no goodbye: the server may not answer). */
  destroy(reason: SftpError): void;
}

/** How to reach and log in to an SFTP server (the drop store adds its folder). */
export interface SftpConnectionOptions {
  host: string;
  /** @default 22 */
  port?: number;
  username: string;
  /** Password authentication, for partners who offer nothing else. Prefer `privateKey`. */
  password?: string;
  /** A private key's contents (OpenSSH or PEM), not a path: secrets come from env or mounted files. */
  privateKey?: string | Buffer;
  /** Unlocks an encrypted `privateKey`. */
  passphrase?: string;
  /**
   * The server's host key(s) as `ssh-keygen -l` prints them (`SHA256:…`). Pin these and/or give
   * `knownHosts`: a server whose key matches neither is refused, and with neither given the
   * store refuses to start — trusting whatever key a server shows lets anyone in the middle
   * read partner files.
   */
  hostKeyFingerprints?: string[];
  /** Contents of a known_hosts file (plain, `[host]:port`, wildcard and hashed names; `@revoked`). */
  knownHosts?: string;
  /**
   * Bounds every call (connect excluded), and each wait for the next chunk of a read stream. On a
   * timeout the connection is dropped and the next call opens a new one: some server failures
   * leave the library waiting forever.
   * @default 30000
   */
  timeoutMs?: number;
  /** Bounds opening the connection (TCP, handshake, auth, SFTP channel). @default 10000 */
  readyTimeoutMs?: number;
}

/** The store's options with every default filled in; the drop folder is the store's business. */
export type SessionOptions = Required<
  Pick<SftpConnectionOptions, 'host' | 'port' | 'username' | 'timeoutMs' | 'readyTimeoutMs'>
> &
  Pick<
    SftpConnectionOptions,
    'password' | 'privateKey' | 'passphrase' | 'hostKeyFingerprints' | 'knownHosts'
  >;

export type SftpErrorCode =
  | 'sftp-host-key-rejected'
  | 'sftp-unreachable'
  | 'sftp-timeout'
  | 'sftp-connection-lost'
  | 'sftp-failed';

/** Every failure of the SFTP drop. Messages name the server and the remote path, never a secret. */
export class SftpError extends Error {
  override readonly name = 'SftpError';
  constructor(
    readonly code: SftpErrorCode,
    message: string,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

export interface Connection {
  /** Runs `fn` on the open connection (opening it first), bounded by `timeoutMs`. */
  use<T>(what: string, remotePath: string, fn: (session: Session) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function createConnection(options: SessionOptions, where: string): Connection {
  const server = `${options.username}@${options.host}:${options.port}`;
  const hostKeys = hostKeyPolicy(options);
  let current: Promise<Session> | undefined;

  function session(): Promise<Session> {
    if (!current) {
      const attempt = connect(options, server, hostKeys);
      current = attempt;
      const forget = () => {
        if (current === attempt) current = undefined;
      };
      attempt.then((s) => s.signal.addEventListener('abort', forget, { once: true }), forget);
    }
    return current;
  }

  return {
    async use(what, remotePath, fn) {
      const s = await session();
      const detail = `${what} ${remotePath} on ${where}`;
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const bounds = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new SftpError(
            'sftp-timeout',
            `SFTP ${detail} timed out after ${options.timeoutMs} ms; the connection is dropped and re-opened on the next call`,
          );
          reject(error);
          s.destroy(error); // fails the other calls on this connection too, through onAbort
        }, options.timeoutMs);
        onAbort = () => {
          const reason = s.signal.reason as SftpError;
          reject(
            new SftpError(
              reason.code === 'sftp-timeout' ? 'sftp-timeout' : 'sftp-connection-lost',
              `SFTP ${detail} failed: ${reason.message}`,
              reason,
            ),
          );
        };
        if (s.signal.aborted) onAbort();
        else s.signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        return await Promise.race([fn(s), bounds]);
      } catch (error) {
        if (error instanceof SftpError) throw error;
        throw new SftpError('sftp-failed', `SFTP ${detail} failed: ${messageOf(error)}`, error);
      } finally {
        clearTimeout(timer);
        s.signal.removeEventListener('abort', onAbort!);
      }
    },

    async close() {
      const attempt = current;
      current = undefined;
      const s = await attempt?.catch(() => undefined);
      if (!s || s.signal.aborted) return;
      // A polite end first; the library's end() can hang after a reset, so it gets a short bound.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        s.client.end().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, Math.min(options.timeoutMs, 2_000)))),
      ]);
      clearTimeout(timer);
      s.destroy(new SftpError('sftp-connection-lost', `SFTP connection to ${where} was closed`));
    },
  };
}

async function connect(
  options: SessionOptions,
  server: string,
  hostKeys: HostKeyPolicy,
): Promise<Session> {
  // Callbacks given, all empty: the library's defaults print every error/end/close to the console.
  const client = new (await sftpLibrary())(`warehouse-ingest ${server}`, {});
  // Our own socket, so that a timeout can always drop the connection, whatever the library waits on.
  // No Nagle: SFTP is request/answer, and a small request held back until the server's delayed
  // ACK costs ~40 ms on every stat, rename and write (it did, before this was set).
  const socket = net.connect({ host: options.host, port: options.port, noDelay: true });
  const lost = new AbortController();
  const destroy = (reason: SftpError) => {
    if (!lost.signal.aborted) lost.abort(reason);
    socket.destroy();
  };
  let firstError: unknown;
  const gone = () => {
    const why = firstError === undefined ? '' : `: ${messageOf(firstError)}`;
    destroy(
      new SftpError(
        'sftp-connection-lost',
        `SFTP connection to ${server} was lost${why}`,
        firstError,
      ),
    );
  };
  client.on('close', gone);
  client.on('end', gone);
  client.on('error', (error: unknown) => {
    firstError ??= error; // the cause worth reporting (refused, reset, auth failed), not the close after it
    gone();
  });
  let seen: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const sftp = await Promise.race([
      client.connect({
        sock: socket,
        host: options.host,
        port: options.port,
        username: options.username,
        password: options.password,
        privateKey: options.privateKey,
        passphrase: options.passphrase,
        readyTimeout: 0, // bounded below, together with opening the SFTP channel (one timer, one error)
        hostVerifier: (key: Buffer) => {
          seen = fingerprintOf(key);
          return hostKeys.accepts(key);
        },
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new SftpError(
                'sftp-timeout',
                `SFTP connection to ${server} was not ready within ${options.readyTimeoutMs} ms`,
              ),
            ),
          options.readyTimeoutMs,
        );
      }),
      new Promise<never>((_, reject) =>
        lost.signal.addEventListener('abort', () => reject(lost.signal.reason), { once: true }),
      ),
    ]);
    sftp.on('error', () => gone());
    sftp.on('close', gone);
    return { client, sftp, signal: lost.signal, destroy };
  } catch (error) {
    destroy(new SftpError('sftp-connection-lost', `SFTP connection to ${server} failed`));
    if (seen !== undefined && !hostKeys.accepted(seen)) {
      throw new SftpError(
        'sftp-host-key-rejected',
        `Refused SFTP server ${server}: its host key ${seen} ${hostKeys.describe()}; not connecting`,
      );
    }
    if (error instanceof SftpError && error.code === 'sftp-timeout') throw error;
    throw new SftpError(
      'sftp-unreachable',
      `Could not connect to SFTP server ${server}: ${messageOf(firstError ?? error)}`,
      firstError ?? error,
    );
  } finally {
    clearTimeout(timer);
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * ssh2-sftp-client (and ssh2 under it), loaded by the first SFTP connection: ~16 MiB of resident
 * memory and ~25 files read at start-up that a service without SFTP drops never needs.
 */
let library: Promise<typeof SftpClient> | undefined;
const sftpLibrary = () => (library ??= import('ssh2-sftp-client').then((module) => module.default));
