import { afterAll, beforeAll } from 'vitest';
import { createLogger, type Logger } from '../../src/log.js';
import type { Ingest } from '../../src/ingest/batch.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from './broker.js';

/** What `useRealIngest()` gives a test file once its `beforeAll` ran. */
export interface RealIngest {
  readonly ingest: Ingest;
  readonly publisher: RabbitMqPublisher;
  /** A fresh exchange and queue bound to everything (`#`). */
  readonly topology: TestTopology;
}

/**
 * The pipeline's `ingest()` over a real RabbitMQ publisher on a fresh test exchange, set up before
 * the file's tests and torn down after them. Read the fields inside tests (they are set in `beforeAll`).
 */
export function useRealIngest(
  options: { readonly prefix?: string; readonly log?: Logger } = {},
): RealIngest {
  const log = options.log ?? createLogger({ level: 'silent' });
  const parts = {} as { ingest: Ingest; publisher: RabbitMqPublisher; topology: TestTopology };
  beforeAll(async () => {
    parts.topology = await declareTestTopology({
      bindingKeys: ['#'],
      ...(options.prefix ? { prefix: options.prefix } : {}),
    });
    parts.publisher = createRabbitMqPublisher(
      { url: AMQP_URL, exchange: parts.topology.exchange, queues: [] },
      log,
    );
    await parts.publisher.start();
    parts.ingest = createIngest({
      publisher: parts.publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
    });
  });
  afterAll(async () => {
    await parts.publisher?.close();
    await parts.topology?.cleanup();
  });
  return parts;
}
