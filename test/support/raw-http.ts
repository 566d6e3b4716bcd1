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
