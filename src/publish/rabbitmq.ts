import type { ChannelModel, Options } from 'amqplib';
import {
  brokerNodeOf,
  brokerNodes,
  nodeAddress,
  openBrokerConnection,
} from '../broker/connection.js';
import { PublishFailed, PublishNacked, QueueTypeMismatch, ShardPluginMissing } from '../errors.js';
import { reconnectDelay } from '../backoff.js';
import { safeUrl, type Logger } from '../log.js';
import type { OutboundMessage, Publisher, ReadinessCheck } from './publisher.js';
import { confirmedChannel, type ConfirmedChannel } from '../broker/confirms.js';
import {
  assertTopology,
  checkTopology,
  messageOf,
  TopologyError,
  type Topology,
} from './rabbitmq-topology.js';

export interface RabbitMqOptions {
  /**
   * Broker address, `amqp://user:password@host:5672/vhost` (or `amqps://`), or the addresses of
   * a cluster's nodes (tried in a shuffled order, failing over to the next on a loss:
   * broker/connection.ts). They hold passwords, so they are only ever logged or shown through
   * `safeUrl`, and the node in use as `host:port`. Required.
   */
  url: string | readonly string[];
  /**
   * Durable topic exchange every message goes to. Declared at start and after every reconnect,
   * so a fresh or wiped broker works without manual set-up. Required.
   */
  exchange: string;
  /**
   * Durable queues bound to the exchange, declared with it, so that records published before
   * any consumer exists are kept rather than returned as unroutable. Empty when another service
   * owns the queues (readiness then checks only the exchange).
   * @default []
   */
  queues?: ReadonlyArray<{
    name: string;
    bindingKeys: readonly string[];
    arguments?: Readonly<Record<string, unknown>>;
    /** Spread over this many queues by message id (rabbitmq-topology.ts, `shardNames`). */
    shards?: number;
  }>;
  // Queue arguments: `x-queue-type` is `quorum` unless given (rabbitmq-topology.ts, `queueArguments`).
  /**
   * How long a `publish` call may wait for every confirm. A blocked or silent broker would
   * otherwise hold HTTP requests forever; past this the batch fails with 503 and is retried.
   * @default 10000
   */
  publishTimeoutMs?: number;
  /**
   * Back-off between reconnect attempts: doubles from `initialDelayMs` up to `maxDelayMs`
   * (with jitter, so restarted instances do not reconnect in lockstep). Retries never stop.
   * @default { initialDelayMs: 500, maxDelayMs: 30000 }
   */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Shown as `connection_name` in the broker's connection list, to tell instances apart. @default `warehouse-ingest publisher` */
  clientName?: string;
  /** Bounds one TCP + AMQP handshake, so an address that swallows packets cannot stall recovery. @default 10000 */
  connectTimeoutMs?: number;
}

/**
 * `connecting` until the first success, `connected` while a publishing channel is open,
 * `reconnecting` after a loss, `closed` after `close()`.
 */
export type RabbitMqState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface RabbitMqPublisher extends Publisher {
  readonly state: RabbitMqState;
  readonly connected: boolean;
  /** The node (`host:port`) the publishing connection is on; undefined while not connected. */
  readonly node: string | undefined;
  /** For metrics: called on every state change. Returns the unsubscribe function. */
  onStateChange(listener: (state: RabbitMqState) => void): () => void;
}

/** Resolves with the promise's value, or with `fallback` after `ms`. Used where a dying socket could hang a call. */
function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, fallback)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const CLOSE_GRACE_MS = 2000;

/**
 * Recovery is a small hand-written loop rather than amqplib's `recovery` option: we must also
 * reopen the publishing channel when it alone closes (a 404 on a deleted exchange leaves the
 * connection up), which the built-in recovery does not do, and one loop for both cases is
 * easier to follow than the library's events plus a second loop. It also avoids the built-in
 * wrapper's trap of channel calls that wait forever while disconnected: here, while no channel
 * is open, `publish` fails at once with 503.
 */
export function createRabbitMqPublisher(
  options: RabbitMqOptions,
  parentLog: Logger,
): RabbitMqPublisher {
  const urls = typeof options.url === 'string' ? [options.url] : options.url;
  // One URL: as before, without its password. A cluster: its nodes as host:port (a joined list
  // of URLs is no URL, and the log's redaction would show it as unparseable).
  const target =
    urls.length === 1 ? safeUrl(urls[0] as string) : `nodes ${urls.map(nodeAddress).join(', ')}`;
  const nodes = brokerNodes(urls);
  // Every line names the broker, once: a binding here, never a field of a line too.
  const log = parentLog.child(
    urls.length === 1 ? { broker: target } : { brokerNodes: urls.map(nodeAddress) },
  );
  const topology: Topology = { exchange: options.exchange, queues: options.queues ?? [] };
  const publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
  const initialDelayMs = options.reconnect?.initialDelayMs ?? 500;
  const maxDelayMs = options.reconnect?.maxDelayMs ?? 30_000;

  let state: RabbitMqState = 'idle';
  const listeners = new Set<(state: RabbitMqState) => void>();
  let connection: ChannelModel | undefined;
  let lostWith: Error | undefined;
  let lostNode: string | undefined;
  let lastNackReopen = 0;
  let blockedBy: string | undefined;
  let publishing: ConfirmedChannel | undefined;
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let requestStop!: () => void;
  const stopRequested = new Promise<{ error?: Error }>(
    (resolve) => (requestStop = () => resolve({})),
  );
  let started: Promise<void> | undefined;
  /** Whether `start()` has answered: a topology the broker cannot take fails it only until then. */
  let startSettled = false;
  let supervisor: Promise<void> = Promise.resolve();
  let closing: Promise<void> | undefined;

  function setState(next: RabbitMqState): void {
    if (state === next) return;
    state = next;
    for (const listener of listeners) listener(next);
  }

  async function openConnection(): Promise<ChannelModel> {
    const model = await openBrokerConnection({
      url: urls,
      nodes,
      name: options.clientName ?? 'warehouse-ingest publisher',
      ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
    });
    // 'error' is always followed by 'close' with the same error; the loop logs it there.
    model.on('error', () => {});
    model.on('close', (error?: Error) => {
      if (connection === model) connection = undefined;
      lostWith = error;
      lostNode = brokerNodeOf(model);
    });
    model.on('blocked', (reason: string) => {
      blockedBy = reason;
      log.warn(
        { reason },
        'the broker is blocking publishes (resource alarm); batches will time out until it unblocks',
      );
    });
    model.on('unblocked', () => {
      blockedBy = undefined;
      log.info('the broker unblocked publishes');
    });
    return model;
  }

  function pause(ms: number): Promise<unknown> {
    return within(stopRequested, ms, {});
  }

  /** Connects, declares topology, opens the confirm channel; again after any loss, until `close()`. */
  async function supervise(firstAttemptDone: (error?: unknown) => void): Promise<void> {
    let failures = 0;
    let everConnected = false;
    while (!stopping) {
      try {
        if (!connection) {
          const model = await openConnection();
          if (stopping) {
            await within(
              model.close().catch(() => {}),
              CLOSE_GRACE_MS,
              undefined,
            );
            break;
          }
          connection = model;
        }
        await assertTopology(connection, topology);
        const channel = confirmedChannel(
          await connection.createConfirmChannel(),
          topology.exchange,
          publishTimeoutMs,
        );
        if (stopping) {
          channel.channel.close().catch(() => {});
          break;
        }
        publishing = channel;
        log.info(
          { afterFailedAttempts: failures, node: brokerNodeOf(connection) },
          everConnected ? 'reconnected to the message broker' : 'connected to the message broker',
        );
        everConnected = true;
        failures = 0;
        setState('connected');
        firstAttemptDone();
        const { error } = await Promise.race([channel.closed, stopRequested]);
        publishing = undefined;
        if (stopping) break;
        setState('reconnecting');
        if (connection)
          log.warn(
            { reason: error?.message, node: brokerNodeOf(connection) },
            'the broker closed the publishing channel; reopening it',
          );
        else
          log.warn(
            { reason: lostWith ? messageOf(lostWith) : 'closed', node: lostNode },
            urls.length > 1
              ? 'lost the connection to the message broker node; failing over to the next node'
              : 'lost the connection to the message broker; reconnecting',
          );
      } catch (error) {
        if (stopping) break; // our own close() cut the attempt short: not a failure to report
        if (!startSettled && fatalAtStart(error)) {
          // The configuration and the broker disagree in a way waiting cannot fix: stop the start.
          log.error({ reason: messageOf(error) }, 'the broker cannot take the configured topology');
          setState('closed');
          const model = connection;
          connection = undefined;
          if (model)
            await within(
              model.close().catch(() => {}),
              CLOSE_GRACE_MS,
              undefined,
            );
          firstAttemptDone(error);
          return;
        }
        failures += 1;
        setState(everConnected ? 'reconnecting' : 'connecting');
        const retryInMs = reconnectDelay(failures, initialDelayMs, maxDelayMs);
        if (error instanceof TopologyError || fatalAtStart(error)) {
          log.error(
            { reason: error.message, retryInMs },
            'the broker refused the configured topology; fix the broker or the configuration',
          );
        } else {
          log.warn(
            { reason: messageOf(error), attempt: failures, retryInMs },
            'could not connect to the message broker',
          );
        }
        firstAttemptDone();
        await pause(retryInMs);
        continue;
      }
      if (!stopping) await pause(reconnectDelay(0, initialDelayMs, maxDelayMs));
    }
  }

  async function readiness(): Promise<ReadinessCheck> {
    const model = connection;
    if (state === 'closed') return { ready: false, problems: ['the publisher is closed'] };
    if (!model || !publishing)
      return { ready: false, problems: [`not connected to the message broker at ${target}`] };
    const budget = Math.min(publishTimeoutMs, 5000);
    const problems = await within(checkTopology(model, topology), budget, [
      `the broker did not answer the topology check within ${budget} ms`,
    ]);
    if (blockedBy !== undefined) problems.push(`the broker is blocking publishes: ${blockedBy}`);
    return { ready: problems.length === 0, problems };
  }

  async function shutDown(): Promise<void> {
    stopping = true;
    // Let in-flight batches get their confirms while the channel is still open.
    await within(Promise.all(inFlight), publishTimeoutMs, undefined);
    setState('closed');
    requestStop();
    const channel = publishing?.channel;
    const model = connection;
    publishing = undefined;
    connection = undefined;
    if (channel)
      await within(
        channel.close().catch(() => {}),
        CLOSE_GRACE_MS,
        undefined,
      );
    if (model)
      await within(
        model.close().catch(() => {}),
        CLOSE_GRACE_MS,
        undefined,
      );
    await supervisor;
    log.info('closed the connection to the message broker');
  }

  return {
    name: 'rabbitmq',
    target,
    get state() {
      return state;
    },
    get connected() {
      return state === 'connected';
    },
    get node() {
      const model = connection;
      return model && publishing ? brokerNodeOf(model) : undefined;
    },
    onStateChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    start() {
      if (started) return started;
      setState('connecting');
      started = new Promise<void>((resolve, reject) => {
        const firstAttemptDone = (error?: unknown) => {
          startSettled = true;
          if (error) reject(error);
          else resolve();
        };
        supervisor = supervise(firstAttemptDone).catch((error: unknown) => {
          // Unreachable by design (every step is caught inside); never let it pass silently.
          log.error({ reason: messageOf(error) }, 'the broker connection supervisor stopped');
          resolve();
        });
      });
      return started;
    },
    async publish(messages) {
      if (messages.length === 0) return; // nothing to confirm, even while the broker is away
      if (stopping)
        throw new PublishFailed('The service is shutting down; the batch was not accepted.');
      const current = publishing;
      if (!current)
        throw new PublishFailed(
          'The message broker is not reachable right now; the batch was not accepted.',
        );
      const outcome = current.send(messages, recordProperties);
      outcome.catch((error: unknown) => {
        // A nack: the queue could not take a message. After a node loss a channel may keep
        // addressing a quorum queue leader that is gone (seen on RabbitMQ 3.10 after kill -9,
        // nacks for a minute and more): a fresh channel asks for the leader again. At most one a
        // second, so a queue that refuses for another reason (a length limit) is not thrashed.
        if (!(error instanceof PublishNacked) || publishing !== current) return;
        if (Date.now() - lastNackReopen < 1000) return;
        lastNackReopen = Date.now();
        log.warn('the broker refused messages (nack); opening a fresh publishing channel');
        current.channel.close().catch(() => {});
      });
      const settled = outcome.then(
        () => {},
        () => {},
      );
      inFlight.add(settled);
      void settled.then(() => inFlight.delete(settled));
      return outcome;
    },
    readiness,
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}

/** Errors of the first attempt that end the start instead of a retry (errors.ts says why for each). */
function fatalAtStart(error: unknown): error is QueueTypeMismatch | ShardPluginMissing {
  return error instanceof QueueTypeMismatch || error instanceof ShardPluginMissing;
}

/** A record's AMQP properties (delivery-guarantee.md lists them). */
function recordProperties(message: OutboundMessage): Options.Publish {
  return {
    persistent: true,
    mandatory: true,
    messageId: message.messageId,
    correlationId: message.correlationId,
    type: message.type,
    contentType: 'application/json',
    timestamp: Math.floor(message.timestamp / 1000),
    headers: message.headers,
  };
}
