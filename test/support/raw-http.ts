import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/**
 * Writes `chunks` on a fresh connection exactly as given (bytes no HTTP client would send) and
 * reads until the server closes. Fails after `timeoutMs` instead of hanging the suite.
 */
export function rawRequest(
  url: string,
  chunks: Array<string | Buffer>,
  timeoutMs = 15_000,
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
    socket.on('data', (data) => received.push(data));
    socket.on('error', () => undefined); // a reset after the answer is fine; no answer is caught below
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(received).toString('latin1');
      const [head = '', ...rest] = raw.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const status = Number(statusLine.split(' ')[1]);
      if (!status) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`));
      const headers = Object.fromEntries(
        lines.map((l) => [
          l.slice(0, l.indexOf(':')).toLowerCase(),
          l.slice(l.indexOf(':') + 1).trim(),
        ]),
      );
      resolve({ status, headers, body: rest.join('\r\n\r\n'), raw });
    });
  });
}

/** A connection a test holds open, as a stalled or hostile client would. */
export interface HeldConnection {
  /** Whatever the server sent on it. */
  received(): Buffer;
  /** True once the connection is closed, by either side. */
  closed(): boolean;
  /** Closes the client's side (a FIN, as a client that leaves does). */
  close(): void;
}

/**
 * Connects, writes `bytes` (none: a client that says nothing) and holds the connection, reading
 * whatever comes; resolves once connected. The server may close it at any time after.
 */
export function holdConnection(url: string, bytes?: string | Buffer): Promise<HeldConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    let closed = false;
    socket.on('data', (data) => received.push(data));
    socket.on('close', () => void (closed = true));
    socket.once('error', reject);
    socket.on('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined); // a reset by the server is one way of closing
      if (bytes !== undefined) socket.write(bytes);
      resolve({
        received: () => Buffer.concat(received),
        closed: () => closed,
        close: () => void socket.destroy(),
      });
    });
  });
}
