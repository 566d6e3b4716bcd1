import { connect, type ChannelModel } from 'amqplib';
import { reconnectDelay } from '../backoff.js';

/**
 * The one place a RabbitMQ connection is opened. Every part that talks to the broker — the
 * publisher, the events consumer, the drop lease, and each command of the command line — comes
 * through here, so what a connection needs (its name in the management UI, the heartbeat, the
 * time-out of the handshake; later a list of nodes) is set once.
 */
export interface BrokerConnectionOptions {
  /** Broker address, `amqp://user:password@host:5672/vhost` (or `amqps://`); holds a password, never logged. */
  readonly url: string;
  /** Shown as `connection_name` in the broker's connection list: what this connection is for. */
  readonly name: string;
  /**
   * AMQP heartbeat in seconds: a peer that stops answering is taken for gone after about twice
   * this. Omitted: what the broker proposes (60 s by default).
   */
  readonly heartbeatSeconds?: number;
  /** Bounds one TCP + AMQP handshake, so an address that swallows packets cannot stall a start. @default 10000 */
  readonly connectTimeoutMs?: number;
}

export function openBrokerConnection(options: BrokerConnectionOptions): Promise<ChannelModel> {
  let url = options.url;
  if (options.heartbeatSeconds !== undefined) {
    const withHeartbeat = new URL(options.url);
    withHeartbeat.searchParams.set('heartbeat', String(options.heartbeatSeconds));
    url = withHeartbeat.toString();
  }
  return connect(url, {
    timeout: options.connectTimeoutMs ?? 10_000,
    clientProperties: { connection_name: options.name },
  });
}

export interface KeptConnectionOptions extends BrokerConnectionOptions {
  /** @default { initialDelayMs: 500, maxDelayMs: 30000 } */
  readonly reconnect?: { readonly initialDelayMs?: number; readonly maxDelayMs?: number };
  /**
   * What to do on every fresh connection (declare queues, open channels, start consuming). A
   * throw closes that connection and counts as a failed attempt.
   */
  readonly setUp: (model: ChannelModel) => Promise<void>;
  /** The connection was lost after a set-up had succeeded (a reconnect follows). */
  readonly onLost?: (error: Error | undefined) => void;
  /** An attempt failed (connecting or setting up); the next follows after `retryInMs`. */
  readonly onFailed?: (error: Error, retryInMs: number) => void;
}

export interface KeptConnection {
  /** Settles with the first attempt: resolves once set up, rejects with its error (retries go on). */
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
  const maxDelayMs = options.reconnect?.maxDelayMs ?? 30_000;
  let current: ChannelModel | undefined;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;

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
      model = await openBrokerConnection(options);
      const opened = model;
      current = opened;
      opened.on('error', () => undefined); // 'close' follows with the same error
      let setUpDone = false;
      opened.on('close', (error?: Error) => {
        if (current === opened) current = undefined;
        if (closed || !setUpDone) return;
        options.onLost?.(error);
        schedule(nextDelay());
      });
      await options.setUp(opened);
      setUpDone = true;
      failures = 0;
      if (closed) await opened.close().catch(() => undefined);
    } catch (error) {
      if (model && current === model) current = undefined;
      await model?.close().catch(() => undefined);
      if (!closed) {
        const delayMs = nextDelay();
        options.onFailed?.(error as Error, delayMs);
        schedule(delayMs);
      }
      throw error;
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
