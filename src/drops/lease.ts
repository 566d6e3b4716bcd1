import type { Channel, ChannelModel } from 'amqplib';
import { brokerNodeOf, keepBrokerConnection } from '../broker/connection.js';
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
  url: string | readonly string[];
  /** One lease per pipeline: the queue is `warehouse-ingest.lease.<pipeline>`. */
  pipeline: string;
  /**
   * AMQP heartbeat of the lease connection, in seconds. A worker that hangs (frozen, not crashed)
   * loses the lease after about twice this, when the broker stops hearing from it.
   * @default 10
   */
  heartbeatSeconds?: number;
  /** @default { initialDelayMs: 500, maxDelayMs: 5000 } */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
}

export const leaseQueue = (pipeline: string) => `warehouse-ingest.lease.${pipeline}`;

const LEASE_ARGUMENTS = {
  'x-single-active-consumer': true,
  'x-max-length': 1,
  'x-overflow': 'drop-head',
};

/**
 * A quorum queue: replicated, so the lease (and the standby consumers registered on it) outlives
 * the loss of any one node of a cluster, and the broker still hands the token to the next
 * consumer when the holder's connection ends. Older versions declared a classic, non-durable,
 * auto-deleted queue of the same name; while one exists (older workers still running), the
 * quorum declaration is refused with PRECONDITION_FAILED and this worker takes part in that
 * queue's lease instead — two queues would mean two leases, two workers on one drop.
 */
async function declareLeaseQueue(
  model: ChannelModel,
  channel: Channel,
  queue: string,
): Promise<{ channel: Channel; type: 'quorum' | 'classic' }> {
  try {
    await channel.assertQueue(queue, {
      durable: true,
      // Removed by the broker once no worker has consumed from it for an hour (a pipeline gone).
      arguments: { 'x-queue-type': 'quorum', 'x-expires': 3_600_000, ...LEASE_ARGUMENTS },
    });
    return { channel, type: 'quorum' };
  } catch (error) {
    if ((error as { code?: unknown }).code !== 406) throw error;
    const fresh = await model.createChannel();
    fresh.on('error', () => undefined);
    await fresh.assertQueue(queue, {
      durable: false,
      autoDelete: true,
      arguments: LEASE_ARGUMENTS,
    });
    return { channel: fresh, type: 'classic' };
  }
}

/**
 * A lease held through RabbitMQ, which every worker already talks to, so no other coordinator
 * is needed. Each pipeline has a queue with `x-single-active-consumer`: the broker delivers to
 * one consumer only, and promotes the next when that consumer's connection ends — a crash, a
 * stop, or missed heartbeats. The queue holds a token message; the active consumer receives it
 * and keeps it unacknowledged, and holding the token *is* holding the lease. Every worker
 * publishes a token when it connects (a wiped broker or a deleted queue heals itself);
 * `x-max-length: 1` keeps at most one token waiting besides the one held, because messages
 * being held do not count towards the limit. The queue is a quorum queue (`declareLeaseQueue`),
 * so on a cluster the lease survives the loss of a node: the holder on the lost node loses its
 * connection, the token goes back, and a standby on another node receives it.
 */
export function createRabbitMqLease(options: RabbitMqLeaseOptions, log: Logger): DropLease {
  const queue = leaseQueue(options.pipeline);
  let held = false;
  const waiters = new Set<() => void>();

  const setHeld = (value: boolean, node?: string) => {
    if (held === value) return;
    held = value;
    log.info(
      { lease: queue, ...(node && { node }) },
      value ? 'holding the drop lease: this worker takes files' : 'lease lost: standing by',
    );
    if (value) for (const wake of waiters) wake();
  };

  async function setUp(model: ChannelModel): Promise<void> {
    model.on('close', () => setHeld(false));
    const first: Channel = await model.createChannel();
    first.on('error', () => undefined);
    const { channel, type } = await declareLeaseQueue(model, first, queue);
    if (type === 'classic')
      log.warn(
        { lease: queue },
        'the drop lease queue is still the classic one of an older version (not replicated: a lost broker node loses the lease queue); it becomes a quorum queue once every worker of the pipeline runs this version and the old queue is gone',
      );
    await channel.prefetch(1);
    channel.sendToQueue(queue, Buffer.from('lease'), { persistent: false });
    await channel.consume(queue, (message) => {
      // Never acknowledged: the broker hands the token on when this connection ends.
      if (message) return setHeld(true, brokerNodeOf(model));
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
    onLost: (error, node) =>
      log.warn(
        { lease: queue, node, reason: error?.message },
        'lost the broker connection of the drop lease; reconnecting (the next node first)',
      ),
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
