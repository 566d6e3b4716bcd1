/**
 * The embedded history served on a unix socket while `serve` holds its folder, so a command
 * (`lineage`) reaches it with the PostgreSQL adapter instead of failing on the lock. Runs in the
 * worker thread beside PGlite; never a TCP port. The socket's folder is `<folder>.socket` (mode
 * 0700) and the socket `.s.PGSQL.5432` in it (mode 0600): only the service's user connects.
 *
 * PGlite has one session. Each client's exchange (from its first message to a `Sync` or a simple
 * query that leaves no transaction open) takes the whole session (`Session`), and so does each
 * of the store's own calls: a client's statements never interleave with the writer's, nor a
 * transaction with another's. A client that holds the session longer than `HOLD_MS` (an idle
 * transaction) is cut off and its transaction rolled back, so the writer never waits on it.
 * Not `@electric-sql/pglite-socket`: it pins another PGlite release and seven extension packages
 * as peers, and interleaves its clients' messages with the process's own queries.
 */
import { chmod, mkdir, unlink } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

/** The port in the socket's name (`.s.PGSQL.<port>`), what PostgreSQL clients look for. */
const PORT = 5432;
/** A client's exchange holds the session at most this long. */
const HOLD_MS = 10_000;
const MAX_CLIENTS = 8;
/** Unix socket paths longer than this are refused by the kernel (108 bytes with the nul). */
const MAX_PATH = 100;
const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

export const socketDirectory = (directory: string) => `${directory}.socket`;
export const socketFile = (directory: string) =>
  path.join(socketDirectory(directory), `.s.PGSQL.${PORT}`);

/** PGlite's one session, taken in turn: by each store call, and by each client's exchange. */
export class Session {
  #tail: Promise<void> = Promise.resolve();
  /** Resolves when the session is this caller's; call the answer to hand it on. */
  acquire(): Promise<() => void> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const granted = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => released);
    return granted;
  }
  async run<T>(work: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await work();
    } finally {
      release();
    }
  }
}

export interface ServedSocket {
  close(): Promise<void>;
}

/** Serves `db` on `<directory>.socket/.s.PGSQL.5432`; undefined when the path is too long for a socket. */
export async function serveSocket(
  db: PGlite,
  directory: string,
  session: Session,
): Promise<ServedSocket | undefined> {
  const file = socketFile(directory);
  if (file.length > MAX_PATH) return undefined;
  await mkdir(socketDirectory(directory), { recursive: true, mode: 0o700 });
  await chmod(socketDirectory(directory), 0o700);
  // Left by a holder that died: this process holds the folder's lock now.
  await unlink(file).catch(() => undefined);
  const clients = new Set<Socket>();
  const server = createServer((socket) => {
    if (clients.size >= MAX_CLIENTS) return void socket.destroy();
    clients.add(socket);
    socket.once('close', () => clients.delete(socket));
    serveClient(db, session, socket);
  });
  server.maxConnections = MAX_CLIENTS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(file, () => resolve());
  });
  await chmod(file, 0o600);
  server.unref();
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        // A client holding the session lets it go as its connection closes (rolled back).
        for (const socket of clients) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await unlink(file).catch(() => undefined);
      })()),
  };
}

/** A client's message: `type` is its first byte ('' for the startup message), `undefined` for the requests before it. */
interface Message {
  readonly type: string | undefined;
  readonly request?: 'refuse-encryption' | 'cancel';
  readonly bytes: Buffer;
}

function serveClient(db: PGlite, session: Session, socket: Socket): void {
  let buffer: Buffer = Buffer.alloc(0);
  let started = false;
  let release: (() => void) | undefined;
  let holdTimer: NodeJS.Timeout | undefined;
  let work: Promise<void> = Promise.resolve();

  const free = () => {
    clearTimeout(holdTimer);
    release?.();
    release = undefined;
  };

  /** The next whole message in the buffer, if any. */
  function next(): Message | undefined {
    if (!started) {
      if (buffer.length < 8) return undefined;
      const length = buffer.readInt32BE(0);
      if (buffer.length < length) return undefined;
      const code = buffer.readInt32BE(4);
      const bytes = buffer.subarray(0, length);
      buffer = buffer.subarray(length);
      if (code === SSL_REQUEST || code === GSS_REQUEST)
        return { type: undefined, request: 'refuse-encryption', bytes };
      if (code === CANCEL_REQUEST) return { type: undefined, request: 'cancel', bytes };
      started = true;
      return { type: '', bytes };
    }
    if (buffer.length < 5) return undefined;
    const length = buffer.readInt32BE(1) + 1;
    if (buffer.length < length) return undefined;
    const bytes = buffer.subarray(0, length);
    buffer = buffer.subarray(length);
    return { type: String.fromCharCode(bytes[0]!), bytes };
  }

  async function drain(): Promise<void> {
    for (;;) {
      const message = next();
      if (!message) return;
      if (message.request === 'refuse-encryption') {
        socket.write('N');
        continue;
      }
      // PGlite has no backend to signal: a cancel request is dropped, as its connection.
      if (message.request === 'cancel' || message.type === 'X') {
        socket.end();
        return;
      }
      if (!release) {
        release = await session.acquire();
        holdTimer = setTimeout(() => socket.destroy(), HOLD_MS);
      }
      const reply = await db.execProtocolRaw(new Uint8Array(message.bytes));
      if (socket.writable) socket.write(reply);
      const settled = message.type === '' || message.type === 'S' || message.type === 'Q';
      if (settled && !db.isInTransaction()) free();
    }
  }

  socket.on('data', (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    work = work.then(drain).catch(() => void socket.destroy());
  });
  socket.on('error', () => undefined); // 'close' follows
  socket.once('close', () => {
    work = work.then(async () => {
      if (!release) return;
      // A client gone mid-transaction: its changes are rolled back before the session is handed on.
      if (db.isInTransaction()) await db.exec('rollback').catch(() => undefined);
      free();
    });
  });
}
