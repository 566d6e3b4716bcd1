import {
  connect,
  type Channel,
  type ChannelModel,
  type ConfirmChannel,
  type GetMessage,
} from 'amqplib';
import { Registry } from 'prom-client';
import { eventsSchema, type EventsConfig, type WebhookConfig } from '../../src/events/config.js';
import { createEventsConsumer, type EventsConsumer } from '../../src/events/consumer.js';
import { createEventsMetrics } from '../../src/events/metrics.js';
import type { Resolver } from '../../src/events/destinations/webhook/ssrf.js';
import { fileDestinations, type OutboundDrop } from '../../src/events/destinations/file/index.js';
import { controlExchangeName } from '../../src/events/control.js';
import type { EventsHistory } from '../../src/events/shared-state.js';
import { resolveEndpoints } from '../../src/events/subscriptions.js';
import { eventsTopology } from '../../src/events/topology.js';
import { workersQueueName } from '../../src/events/worker-report.js';
import { createLogger, type Logger } from '../../src/log.js';
import { AMQP_URL, uniqueName } from './broker.js';

/** Events config with a fresh exchange and queue, and a compressed schedule. */
export function testEventsConfig(overrides: Partial<EventsConfig> = {}): EventsConfig {
  return eventsSchema.parse({
    exchange: uniqueName('test.events.x'),
    queue: { name: uniqueName('test.events.q') },
    retrySchedule: [0, 100, 200],
    deliveryTimeoutMs: 1000,
    prefetch: 16,
    concurrencyPerEndpoint: 2,
    ...overrides,
  });
}

export interface HarnessOptions {
  readonly events: EventsConfig;
  readonly environment?: 'production' | 'development' | 'sandbox';
  readonly tenants: ReadonlyArray<{ businessId: string; webhooks: WebhookConfig[] }>;
  /** Secrets by environment variable name, as `secret: { env }` refers to them. */
  readonly env: NodeJS.ProcessEnv;
  readonly resolver?: Resolver;
  readonly log?: Logger;
  /** The consumer's broker address (e.g. through a TCP proxy), or a cluster's nodes. @default AMQP_URL */
  readonly url?: string | readonly string[];
  /**
   * Where the harness itself inspects and cleans up, asked at its first use (on a cluster, a node
   * the test has not taken down). @default AMQP_URL
   */
  readonly inspectUrl?: () => string;
  /** Pipelines with outbound files (`events` in the pipeline) and their stores. */
  readonly drops?: readonly OutboundDrop[];
  /** How often the worker reports for `events status`. @default 10000 */
  readonly reportIntervalMs?: number;
  /** Where the worker keeps events, attempts and endpoint states. @default none (history off) */
  readonly history?: EventsHistory;
  /** Leave the topology in place on close (another worker of the test goes on with it). */
  readonly keepTopology?: boolean;
}

export interface EventsHarness {
  readonly consumer: EventsConsumer;
  readonly registry: Registry;
  /** Drains the dead-letter queue (auto-ack) and returns its messages. */
  deadLetters(): Promise<GetMessage[]>;
  /** Exact number of letters in the dead-letter queue, without taking them. */
  deadCount(): Promise<number>;
  /** Publishes a raw message to the events exchange (for malformed events). */
  publishRaw(routingKey: string, content: Buffer, properties: object): Promise<void>;
  close(): Promise<void>;
}

export function webhook(url: string, env: string | string[], extra: Partial<WebhookConfig> = {}) {
  const refs = (Array.isArray(env) ? env : [env]).map((name) => ({ env: name }));
  return {
    url,
    secret: refs.length === 1 ? refs[0]! : refs,
    events: ['**'],
    enabled: true,
    allowPrivateNetwork: false,
    ...extra,
  } satisfies WebhookConfig;
}

/** A consumer on the real broker, started, plus a side connection to inspect and clean up. */
export async function startEventsHarness(options: HarnessOptions): Promise<EventsHarness> {
  const environment = options.environment ?? 'development';
  const registry = new Registry();
  const consumer = createEventsConsumer(
    {
      url: options.url ?? AMQP_URL,
      events: options.events,
      environment,
      webhooks: resolveEndpoints(
        { environment, tenants: options.tenants, events: options.events },
        options.env,
      ),
      files: fileDestinations(options.drops ?? [], options.events.deliveryTimeoutMs),
      metrics: createEventsMetrics(
        registry,
        options.tenants.map((t) => t.businessId),
      ),
      ...(options.resolver ? { resolver: options.resolver } : {}),
      reconnect: { initialDelayMs: 100, maxDelayMs: 1000 },
      ...(options.reportIntervalMs ? { reportIntervalMs: options.reportIntervalMs } : {}),
      ...(options.history ? { history: options.history } : {}),
    },
    options.log ?? createLogger({ level: 'silent' }),
  );
  await consumer.start();
  let side: Promise<{ connection: ChannelModel; channel: ConfirmChannel }> | undefined;
  const open = () =>
    (side ??= (async () => {
      const connection = await connect(options.inspectUrl?.() ?? AMQP_URL);
      connection.on('error', () => undefined);
      return { connection, channel: await connection.createConfirmChannel() };
    })());
  const topology = eventsTopology(options.events);
  return {
    consumer,
    registry,
    async deadLetters() {
      const { channel } = await open();
      const out: GetMessage[] = [];
      for (;;) {
        const message = await channel.get(topology.deadQueue, { noAck: true });
        if (message === false) return out;
        out.push(message);
      }
    },
    async deadCount() {
      return (await (await open()).channel.checkQueue(topology.deadQueue)).messageCount;
    },
    async publishRaw(routingKey, content, properties) {
      const { channel } = await open();
      channel.publish(topology.exchange, routingKey, content, properties);
      await channel.waitForConfirms();
    },
    async close() {
      await consumer.close();
      const { connection, channel } = await open();
      if (!options.keepTopology) await deleteEventsTopology(channel, options.events);
      await connection.close().catch(() => undefined);
    },
  };
}

export async function deleteEventsTopology(channel: Channel, events: EventsConfig): Promise<void> {
  const topology = eventsTopology(events);
  const workers = workersQueueName(topology.queue);
  for (const queue of [
    topology.queue,
    topology.deadQueue,
    workers,
    ...topology.retryQueues.values(),
  ])
    await channel.deleteQueue(queue).catch(() => undefined);
  await channel.deleteExchange(topology.exchange).catch(() => undefined);
  await channel.deleteExchange(controlExchangeName(topology.queue)).catch(() => undefined);
}
