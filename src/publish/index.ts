import path from 'node:path';
import type { Logger } from '../log.js';
import { createEmbeddedPublisher } from './embedded.js';
import { createNonePublisher } from './none.js';
import type { Publisher } from './publisher.js';
import { createRabbitMqPublisher } from './rabbitmq.js';
import type { MessageFormat } from './rabbitmq-properties.js';

export type { OutboundMessage, Publisher, ReadinessCheck } from './publisher.js';
export type { MessageFormat } from './rabbitmq-properties.js';
export {
  createRabbitMqPublisher,
  type RabbitMqOptions,
  type RabbitMqPublisher,
  type RabbitMqState,
} from './rabbitmq.js';
export {
  createEmbeddedPublisher,
  type EmbeddedOptions,
  type EmbeddedPublisher,
} from './embedded.js';
export { createNonePublisher } from './none.js';

/**
 * The publisher the configuration asks for: none in the sandbox (it creates nothing), RabbitMQ
 * when a broker URL is set, otherwise the embedded one (a durable outbox folder).
 */
/** What the publisher needs of the configuration (its own slice, so publish/ does not import config). */
export interface PublisherSource {
  readonly environment: 'production' | 'development' | 'sandbox';
  readonly dataDirectory: string;
  readonly broker: {
    readonly url?: string | readonly string[] | undefined;
    readonly exchange: string;
    readonly queues: ReadonlyArray<{
      readonly name: string;
      readonly bindingKeys: readonly string[];
      readonly arguments?: Readonly<Record<string, unknown>> | undefined;
      readonly shards?: number | undefined;
      readonly replaces?: string | undefined;
    }>;
    readonly messageFormat: MessageFormat;
    readonly publishTimeoutMs: number;
    readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  };
}

export function createPublisher(config: PublisherSource, log: Logger): Publisher {
  if (config.environment === 'sandbox') return createNonePublisher();
  if (config.broker.url) {
    return createRabbitMqPublisher(
      {
        url: config.broker.url,
        exchange: config.broker.exchange,
        queues: config.broker.queues.map((q) => ({
          name: q.name,
          bindingKeys: [...q.bindingKeys],
          ...(q.arguments ? { arguments: q.arguments } : {}),
          ...(q.shards ? { shards: q.shards } : {}),
          ...(q.replaces ? { replaces: q.replaces } : {}),
        })),
        messageFormat: config.broker.messageFormat,
        publishTimeoutMs: config.broker.publishTimeoutMs,
        reconnect: { ...config.broker.reconnect },
        clientName: 'warehouse-ingest',
      },
      log.child({ component: 'rabbitmq' }),
    );
  }
  return createEmbeddedPublisher(
    { directory: path.resolve(config.dataDirectory, 'outbox') },
    log.child({ component: 'embedded-publisher' }),
  );
}
