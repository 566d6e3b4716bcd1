import type { Channel, ChannelModel } from 'amqplib';
import { keepBrokerConnection } from '../broker/connection.js';
import type { Logger } from '../log.js';

/**
 * Who may work on a drop right now. Stores with an atomic rename (local folders, SFTP) need no
 * lease: every file is claimed by renaming it, and of two workers exactly one wins. S3 has no
 * rename, so there one worker at a time holds the drop's lease and the others stand by.
 */
export interface DropLease {
  /** True while this worker may take files from the drop. Checked again before publishing and settling. */
  readonly held: boolean;
  /** Waits until the lease is held, or `waitMs` passed; resolves `held`. */
  acquire(waitMs: number): Promise<boolean>;
  /** Gives the lease up (the next standby worker gets it) and closes connections. */
  close(): Promise<void>;
}

/** Always held: for stores with atomic rename, and for a single worker without a broker. */
export const OWN_LEASE: DropLease = {
  held: true,
  acquire: async () => true,
  close: async () => {},
};

export interface RabbitMqLeaseOptions {
  /** Broker address; holds a password, never logged. */
  url: string;
  /** One lease per pipeline: the queue is `warehouse-ingest.lease.<pipeline>`. */
  pipeline: string;
  /**
   * AMQP heartbeat of the lease connection, in seconds. A worker that hangs (frozen, not crashed)
   * loses the lease after about twice this, when the broker stops hearing from it.
   * @default 10
   */
  heartbeatSeconds?: number;
  /** @default { initialDelayMs: 500, maxDelayMs: 30000 } */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
}

export const leaseQueue = (pipeline: string) => `warehouse-ingest.lease.${pipeline}`;

/**
 * A lease held through RabbitMQ, which every worker already talks to, so no other coordinator
 * is needed. Each pipeline has a queue with `x-single-active-consumer`: the broker delivers to
 * one consumer only, and promotes the next when that consumer's connection ends — a crash, a
 * stop, or missed heartbeats. The queue holds a token message; the active consumer receives it
 * and keeps it unacknowledged, and holding the token *is* holding the lease. Every worker
 * publishes a token when it connects (a wiped broker or a deleted queue heals itself);
 * `x-max-length: 1` keeps at most one token waiting besides the one held, because messages
 * being held do not count towards the limit.
 */
export function createRabbitMqLease(options: RabbitMqLeaseOptions, log: Logger): DropLease {
  const queue = leaseQueue(options.pipeline);
  let held = false;
  const waiters = new Set<() => void>();

  const setHeld = (value: boolean) => {
    if (held === value) return;
    held = value;
    log.info(
      { lease: queue },
      value ? 'holding the drop lease: this worker takes files' : 'lease lost: standing by',
    );
    if (value) for (const wake of waiters) wake();
  };

  async function setUp(model: ChannelModel): Promise<void> {
    model.on('close', () => setHeld(false));
    const channel: Channel = await model.createChannel();
    channel.on('error', () => undefined);
    // Not durable, auto-deleted: the lease lives while some worker of the pipeline is connected;
    // after a broker restart or when the last worker leaves, the next one declares it afresh.
    await channel.assertQueue(queue, {
      durable: false,
      autoDelete: true,
      arguments: {
        'x-single-active-consumer': true,
        'x-max-length': 1,
        'x-overflow': 'drop-head',
      },
    });
    await channel.prefetch(1);
    channel.sendToQueue(queue, Buffer.from('lease'), { persistent: false });
    await channel.consume(queue, (message) => {
      // Never acknowledged: the broker hands the token on when this connection ends.
      if (message) return setHeld(true);
      // Cancelled by the broker (the queue was deleted): start over on a new connection.
      setHeld(false);
      void model.close().catch(() => undefined);
    });
  }

  const connection = keepBrokerConnection({
    url: options.url,
    name: `warehouse-ingest lease ${options.pipeline}`,
    heartbeatSeconds: options.heartbeatSeconds ?? 10,
    ...(options.reconnect ? { reconnect: options.reconnect } : {}),
    setUp,
    onFailed: (error) =>
      log.warn(
        { lease: queue, reason: error.message },
        'could not reach the broker for the drop lease; standing by',
      ),
  });
  // Resolves either way: a worker without the broker stands by and keeps trying.
  const opening = connection.firstAttempt.catch(() => undefined);

  return {
    get held() {
      return held;
    },
    async acquire(waitMs) {
      await opening;
      if (held || waitMs <= 0) return held;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, waitMs);
        waiters.add(wake);
      });
      return held;
    },
    async close() {
      for (const wake of waiters) wake();
      await opening;
      held = false;
      await connection.close();
    },
  };
}
