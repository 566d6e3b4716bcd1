import { brokerNodeOf, brokerNodes, nodeAddress } from '../broker/connection.js';
import { PublishFailed, PublishNacked } from '../errors.js';
import { safeUrl, type Logger } from '../log.js';
import type { Publisher, ReadinessCheck } from './publisher.js';
import { type MessageFormat, recordProperties } from './rabbitmq-properties.js';
import { createChannelSupervisor, type RabbitMqState, within } from './rabbitmq-supervisor.js';
import { checkTopology, type Topology } from './rabbitmq-topology.js';

export type { RabbitMqState } from './rabbitmq-supervisor.js';

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
    /** An older queue this one replaces: unbound on every connect, left to drain (`assertTopology`). */
    replaces?: string;
  }>;
  // Queue arguments: `x-queue-type` is `quorum` unless given (rabbitmq-topology.ts, `queueArguments`).
  /**
   * What each message carries besides its body and id (rabbitmq-properties.ts).
   * @default 'full'
   */
  messageFormat?: MessageFormat;
  /**
   * How long a `publish` call may wait for every confirm. A blocked or silent broker would
   * otherwise hold HTTP requests forever; past this the batch fails with 503 and is retried.
   * @default 10000
   */
  publishTimeoutMs?: number;
  /**
   * Back-off between reconnect attempts: doubles from `initialDelayMs` up to `maxDelayMs`
   * (with jitter, so restarted instances do not reconnect in lockstep). Retries never stop.
   * @default { initialDelayMs: 500, maxDelayMs: 5000 }
   */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Shown as `connection_name` in the broker's connection list, to tell instances apart. @default `warehouse-ingest publisher` */
  clientName?: string;
  /** Bounds one TCP + AMQP handshake, so an address that swallows packets cannot stall recovery. @default 10000 */
  connectTimeoutMs?: number;
}

export interface RabbitMqPublisher extends Publisher {
  readonly state: RabbitMqState;
  readonly connected: boolean;
  /** The node (`host:port`) the publishing connection is on; undefined while not connected. */
  readonly node: string | undefined;
  /** For metrics: called on every state change. Returns the unsubscribe function. */
  onStateChange(listener: (state: RabbitMqState) => void): () => void;
}

/** The publisher over one supervised confirm channel (rabbitmq-supervisor.ts keeps it open). */
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
  const supervisor = createChannelSupervisor(
    {
      urls,
      nodes,
      clientName: options.clientName ?? 'warehouse-ingest publisher',
      connectTimeoutMs: options.connectTimeoutMs,
      topology,
      publishTimeoutMs,
      initialDelayMs: options.reconnect?.initialDelayMs ?? 500,
      maxDelayMs: options.reconnect?.maxDelayMs ?? 5000,
    },
    log,
  );
  const properties = recordProperties(options.messageFormat ?? 'full');
  let lastNackReopen = 0;
  const inFlight = new Set<Promise<void>>();
  let closing: Promise<void> | undefined;

  async function readiness(): Promise<ReadinessCheck> {
    const model = supervisor.connection;
    if (supervisor.state === 'closed')
      return { ready: false, problems: ['the publisher is closed'] };
    if (!model || !supervisor.publishing)
      return { ready: false, problems: [`not connected to the message broker at ${target}`] };
    const budget = Math.min(publishTimeoutMs, 5000);
    const problems = await within(checkTopology(model, topology), budget, [
      `the broker did not answer the topology check within ${budget} ms`,
    ]);
    const blockedBy = supervisor.blockedBy;
    if (blockedBy !== undefined) problems.push(`the broker is blocking publishes: ${blockedBy}`);
    return { ready: problems.length === 0, problems };
  }

  return {
    name: 'rabbitmq',
    target,
    get state() {
      return supervisor.state;
    },
    get connected() {
      return supervisor.state === 'connected';
    },
    get node() {
      const model = supervisor.connection;
      return model && supervisor.publishing ? brokerNodeOf(model) : undefined;
    },
    onStateChange(listener) {
      return supervisor.onStateChange(listener);
    },
    start() {
      return supervisor.start();
    },
    async publish(messages) {
      if (messages.length === 0) return; // nothing to confirm, even while the broker is away
      if (supervisor.stopping)
        throw new PublishFailed('The service is shutting down; the batch was not accepted.');
      const current = supervisor.publishing;
      if (!current)
        throw new PublishFailed(
          'The message broker is not reachable right now; the batch was not accepted.',
        );
      const outcome = current.send(messages, properties);
      outcome.catch((error: unknown) => {
        // A nack: the queue could not take a message. After a node loss a channel may keep
        // addressing a quorum queue leader that is gone (seen on RabbitMQ 3.10 after kill -9,
        // nacks for a minute and more): a fresh channel asks for the leader again. At most one a
        // second, so a queue that refuses for another reason (a length limit) is not thrashed.
        if (!(error instanceof PublishNacked) || supervisor.publishing !== current) return;
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
      closing ??= supervisor.stop(() => Promise.all(inFlight));
      return closing;
    },
  };
}
