import { connect, type ChannelModel } from 'amqplib';
import { reconnectDelay } from '../backoff.js';
import { BrokerUnreachable } from '../operator-errors.js';

/**
 * The one place a RabbitMQ connection is opened. Every part that talks to the broker — the
 * publisher, the events consumer, the drop lease, and each command of the command line — comes
 * through here, so what a connection needs (its name in the management UI, the heartbeat, the
 * time-out of the handshake, the list of a cluster's nodes and the failover between them) is
 * set once.
 */
export interface BrokerConnectionOptions {
  /**
   * Broker address, `amqp://user:password@host:5672/vhost` (or `amqps://`), or the addresses of
   * a cluster's nodes, each with its own credentials. Holds passwords: never logged, only
   * `host:port` is.
   */
  readonly url: string | readonly string[];
  /** Shown as `connection_name` in the broker's connection list: what this connection is for. */
  readonly name: string;
  /**
   * AMQP heartbeat in seconds: a peer that stops answering is taken for gone after about twice
   * this. Omitted: what the broker proposes (60 s by default).
   */
  readonly heartbeatSeconds?: number;
  /** Bounds one TCP + AMQP handshake, so an address that swallows packets cannot stall a start. @default 10000 */
  readonly connectTimeoutMs?: number;
  /**
   * Where to start in the node list: a loop that opens connection after connection passes the
   * same `BrokerNodes` each time, so after a loss it tries the next node first. Omitted: a fresh
   * shuffled list.
   */
  readonly nodes?: BrokerNodes;
}

/**
 * A connection's node list, in the order it tries them: shuffled once, when it is made
 * (docs/decisions.md says why), then round the list. `start` is the node tried first next time:
 * the one in use, or the one after it once its connection was lost.
 */
export interface BrokerNodes {
  readonly urls: readonly string[];
  start: number;
}

/** The node list for one connection: the URLs shuffled (Fisher–Yates), starting at the first. */
export function brokerNodes(url: string | readonly string[]): BrokerNodes {
  const urls = typeof url === 'string' ? [url] : [...url];
  for (let i = urls.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [urls[i], urls[j]] = [urls[j] as string, urls[i] as string];
  }
  return { urls, start: 0 };
}

/** `host:port` of a broker URL: what logs, `/readyz` and `status` show of a node (never credentials). */
export function nodeAddress(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === 'amqps:' ? '5671' : '5672');
    return `${parsed.hostname}:${port}`;
  } catch {
    return '[unparseable url]';
  }
}

const nodeOfConnection = new WeakMap<ChannelModel, string>();

/** The node (`host:port`) a connection opened here is on. */
export function brokerNodeOf(model: ChannelModel): string | undefined {
  return nodeOfConnection.get(model);
}

function connectOne(url: string, options: BrokerConnectionOptions): Promise<ChannelModel> {
  let target = url;
  if (options.heartbeatSeconds !== undefined) {
    const withHeartbeat = new URL(url);
    withHeartbeat.searchParams.set('heartbeat', String(options.heartbeatSeconds));
    target = withHeartbeat.toString();
  }
  return connect(target, {
    timeout: options.connectTimeoutMs ?? 10_000,
    clientProperties: { connection_name: options.name },
  });
}

/**
 * Opens a connection to the first node that takes it, trying each node once, from `nodes.start`
 * round the list. A connection later lost with an error (the node died, stopped, or was cut off)
 * moves `nodes.start` to the next node, so the caller's next attempt fails over at once instead of
 * waiting on the node just lost. Rejects with `BrokerUnreachable` naming every node tried.
 */
export async function openBrokerConnection(
  options: BrokerConnectionOptions,
): Promise<ChannelModel> {
  const nodes = options.nodes ?? brokerNodes(options.url);
  const failures: string[] = [];
  let first: unknown;
  for (let i = 0; i < nodes.urls.length; i++) {
    const index = (nodes.start + i) % nodes.urls.length;
    const url = nodes.urls[index] as string;
    try {
      const model = await connectOne(url, options);
      nodes.start = index;
      nodeOfConnection.set(model, nodeAddress(url));
      model.on('close', (error?: Error) => {
        if (error && nodes.start === index) nodes.start = (index + 1) % nodes.urls.length;
      });
      return model;
    } catch (error) {
      first ??= error;
      failures.push(`${nodeAddress(url)}: ${(error as Error).message}`);
    }
  }
  if (nodes.urls.length === 1) throw first; // one node: its own error, as before
  throw new BrokerUnreachable(failures, { cause: first });
}

export interface KeptConnectionOptions extends BrokerConnectionOptions {
  /** @default { initialDelayMs: 500, maxDelayMs: 5000 } */
  readonly reconnect?: { readonly initialDelayMs?: number; readonly maxDelayMs?: number };
  /**
   * What to do on every fresh connection (declare queues, open channels, start consuming). A
   * throw closes that connection and counts as a failed attempt.
   */
  readonly setUp: (model: ChannelModel) => Promise<void>;
  /** The connection to `node` (`host:port`) was lost after a set-up had succeeded (a reconnect follows, the next node first). */
  readonly onLost?: (error: Error | undefined, node: string | undefined) => void;
  /** An attempt failed (connecting or setting up); the next follows after `retryInMs`. */
  readonly onFailed?: (error: Error, retryInMs: number) => void;
}

export interface KeptConnection {
  /**
   * Settles with the first attempt: resolves once set up, or once it found no broker to connect
   * to (nor lost the connection during set-up), so a part started without its broker starts and
   * attaches when the broker comes; rejects only when the broker refused the set-up on an open
   * connection (a topology it cannot take: a configuration problem). Retries go on either way.
   */
  readonly firstAttempt: Promise<void>;
  /** The open connection, if any. */
  readonly current: ChannelModel | undefined;
  /** Closes the connection and stops reconnecting. */
  close(): Promise<void>;
}

/**
 * A connection kept open: opened, set up, and opened and set up again after a loss, with
 * back-off (`backoff.ts`), until `close()`. For the parts whose whole state lives on one
 * connection (the events consumer, the drop lease); the publisher keeps its own loop because it
 * also reopens a channel alone (rabbitmq.ts says why).
 */
export function keepBrokerConnection(options: KeptConnectionOptions): KeptConnection {
  const initialDelayMs = options.reconnect?.initialDelayMs ?? 500;
  const maxDelayMs = options.reconnect?.maxDelayMs ?? 5000;
  let current: ChannelModel | undefined;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  const nodes = options.nodes ?? brokerNodes(options.url);

  const nextDelay = () => reconnectDelay(failures++, initialDelayMs, maxDelayMs);

  function schedule(delayMs: number): void {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      attempt().catch(() => undefined);
    }, delayMs);
  }

  async function attempt(): Promise<void> {
    if (closed) return;
    let model: ChannelModel | undefined;
    try {
      model = await openBrokerConnection({ ...options, nodes });
      const opened = model;
      current = opened;
      opened.on('error', () => undefined); // 'close' follows with the same error
      let setUpDone = false;
      opened.on('close', (error?: Error) => {
        if (current === opened) current = undefined;
        if (closed || !setUpDone) return;
        options.onLost?.(error, brokerNodeOf(opened));
        schedule(nextDelay());
      });
      await options.setUp(opened);
      setUpDone = true;
      failures = 0;
      if (closed) await opened.close().catch(() => undefined);
    } catch (error) {
      // Refused by the broker on a connection still open; otherwise none was opened, or it was lost.
      const refused = model !== undefined && current === model;
      if (refused) current = undefined;
      await model?.close().catch(() => undefined);
      if (!closed) {
        const delayMs = nextDelay();
        options.onFailed?.(error as Error, delayMs);
        schedule(delayMs);
      }
      if (refused) throw error;
    }
  }

  const firstAttempt = attempt();
  firstAttempt.catch(() => undefined); // the caller may not look; the retries go on either way
  return {
    firstAttempt,
    get current() {
      return current;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const model = current;
      current = undefined;
      await model?.close().catch(() => undefined);
    },
  };
}
