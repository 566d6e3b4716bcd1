import net from 'node:net';

/**
 * A stand-in for one Redis Sentinel, speaking just enough RESP for ioredis: it names a master
 * (`SENTINEL get-master-addr-by-name`), knows no other sentinel, and takes `+switch-master`
 * subscriptions. What a real sentinel set cannot do on demand, it can: announce a failover at the
 * exact moment a client is asking where the master is (`announceOnNextAsk`), the timing behind a
 * client that stopped reconnecting after a master was killed.
 */
export interface FakeSentinel {
  readonly port: number;
  /** `host:port`, as the service's `sentinels` list takes it. */
  readonly address: string;
  /** Times it was asked where the master is. */
  readonly asked: number;
  /**
   * The next `get-master-addr-by-name` is answered only after a `+switch-master` message went to
   * every subscriber, and `delayMs` later.
   */
  announceOnNextAsk(delayMs: number): void;
  close(): Promise<void>;
}

const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
const array = (items: readonly string[]) => `*${items.length}\r\n${items.map(bulk).join('')}`;

/** Reads complete RESP arrays of bulk strings (what clients send) from `buffer`. */
function readCommands(buffer: Buffer): { commands: string[][]; rest: Buffer } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const line = (from: number) => {
      const end = buffer.indexOf('\r\n', from);
      return end === -1 ? undefined : { text: buffer.toString('latin1', from, end), next: end + 2 };
    };
    const head = line(at);
    if (head?.text[0] !== '*') return { commands, rest: buffer.subarray(start) };
    const count = Number(head.text.slice(1));
    at = head.next;
    const command: string[] = [];
    for (let i = 0; i < count; i++) {
      const size = line(at);
      if (!size) return { commands, rest: buffer.subarray(start) };
      const length = Number(size.text.slice(1));
      if (buffer.length < size.next + length + 2) return { commands, rest: buffer.subarray(start) };
      command.push(buffer.toString('utf8', size.next, size.next + length));
      at = size.next + length + 2;
    }
    commands.push(command);
  }
}

export async function startFakeSentinel(options: {
  masterName: string;
  master: { host: string; port: number };
}): Promise<FakeSentinel> {
  const subscribers = new Set<net.Socket>();
  const sockets = new Set<net.Socket>();
  let asked = 0;
  let announce: number | undefined;

  const answer = (socket: net.Socket, command: string[]) => {
    const [name = '', ...args] = command.map((part, i) => (i === 0 ? part.toLowerCase() : part));
    if (name === 'sentinel' && args[0]?.toLowerCase() === 'get-master-addr-by-name') {
      asked += 1;
      const reply = array([options.master.host, String(options.master.port)]);
      if (announce === undefined) return void socket.write(reply);
      const delayMs = announce;
      announce = undefined;
      const message = array([
        'message',
        '+switch-master',
        `${options.masterName} 127.0.0.1 1 ${options.master.host} ${options.master.port}`,
      ]);
      for (const subscriber of subscribers) subscriber.write(message);
      setTimeout(() => socket.write(reply), delayMs);
      return;
    }
    if (name === 'sentinel') return void socket.write('*0\r\n');
    if (name === 'subscribe') {
      subscribers.add(socket);
      return void socket.write(`*3\r\n${bulk('subscribe')}${bulk(args[0] ?? '')}:1\r\n`);
    }
    // RESP2 only: a refused HELLO keeps ioredis on it (pub/sub messages as plain arrays).
    if (name === 'hello') return void socket.write("-ERR unknown command 'hello'\r\n");
    socket.write('+OK\r\n');
  };

  const server = net.createServer((socket) => {
    sockets.add(socket);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      const { commands, rest } = readCommands(Buffer.concat([pending, chunk]));
      pending = rest;
      for (const command of commands) answer(socket, command);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      subscribers.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    address: `127.0.0.1:${port}`,
    get asked() {
      return asked;
    },
    announceOnNextAsk(delayMs) {
      announce = delayMs;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
