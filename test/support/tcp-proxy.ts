import net from 'node:net';

/**
 * A TCP proxy in front of a real service (the broker) that a test can cut, so network
 * failures are injected without touching the machine's broker or other tests' connections.
 */
export interface TcpProxy {
  readonly port: number;
  /** Bytes forwarded from clients to the target since the proxy started. */
  readonly bytesUpstream: number;
  /** Open client connections. */
  readonly connections: number;
  /** Client connections accepted (and forwarded) since the proxy started. */
  readonly accepted: number;
  /** `url` with host and port replaced by the proxy's (credentials and vhost kept). */
  urlFor(url: string): string;
  /** Destroys every open connection. With `refuse`, new ones are reset at once until `restore()`. */
  cut(options?: { refuse?: boolean }): void;
  /**
   * Arms a cut after `bytes` more bytes have flowed upstream (client → target), counted across
   * connections: the chunk that crosses the mark is forwarded only up to it, so the target sees
   * a frame cut in the middle.
   */
  cutAfter(bytes: number, options?: { refuse?: boolean }): void;
  /** Accepts new connections again. */
  restore(): void;
  /**
   * Stops forwarding in both directions without closing anything (a silent network): the
   * client's writes pile up and nothing comes back, e.g. no confirms. `release()` resumes.
   */
  hold(): void;
  release(): void;
  /**
   * Delivers the next chunk the target sends (on any connection) to its client twice, as a faulty
   * middlebox would: a client of a request/reply protocol (Redis) then reads more replies than it
   * sent commands, out of step with them.
   */
  repeatDownstream(): void;
  /**
   * While on, what the target sends is read and thrown away (on every connection): the client's
   * commands still arrive and run, their replies are lost.
   */
  dropDownstream(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let refusing = false;
  let holding = false;
  let accepted = 0;
  let bytesUpstream = 0;
  let cutAt: { bytes: number; refuse: boolean } | undefined;
  let repeatNext = false;
  let dropping = false;

  function cut(options: { refuse?: boolean } = {}): void {
    if (options.refuse) refusing = true;
    cutAt = undefined;
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  }

  const server = net.createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(target);
    const pair = { client, upstream };
    pairs.add(pair);
    accepted += 1;
    if (holding) {
      client.pause();
      upstream.pause();
    }
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);

    client.on('data', (chunk: Buffer) => {
      let forward = chunk;
      const armed = cutAt;
      if (armed && bytesUpstream + chunk.length >= armed.bytes) {
        forward = chunk.subarray(0, Math.max(0, armed.bytes - bytesUpstream));
        bytesUpstream += forward.length;
        upstream.write(forward, () => cut({ refuse: armed.refuse }));
        cutAt = undefined;
        client.pause();
        return;
      }
      bytesUpstream += chunk.length;
      if (!upstream.write(forward)) client.pause();
    });
    upstream.on('drain', () => holding || client.resume());
    upstream.on('data', (chunk: Buffer) => {
      if (dropping) return;
      if (repeatNext) {
        repeatNext = false;
        client.write(chunk);
      }
      if (!client.write(chunk)) upstream.pause();
    });
    client.on('drain', () => holding || upstream.resume());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new Error('the proxy did not get a TCP port');
  const port = address.port;

  return {
    port,
    get bytesUpstream() {
      return bytesUpstream;
    },
    get connections() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    urlFor(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cut,
    cutAfter(bytes, options = {}) {
      cutAt = { bytes: bytesUpstream + bytes, refuse: options.refuse ?? false };
    },
    restore() {
      refusing = false;
    },
    hold() {
      holding = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
    },
    release() {
      holding = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    repeatDownstream() {
      repeatNext = true;
    },
    dropDownstream(on) {
      dropping = on;
    },
    async close() {
      cut({ refuse: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
