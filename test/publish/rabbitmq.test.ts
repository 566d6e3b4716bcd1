import { afterEach, describe, expect, it } from 'vitest';
import { PublishFailed } from '../../src/errors.js';
import { reconnectDelay } from '../../src/backoff.js';
import {
  createRabbitMqPublisher,
  type RabbitMqOptions,
  type RabbitMqPublisher,
} from '../../src/publish/rabbitmq.js';
import { AMQP_URL, declareTestTopology, uniqueName, type TestTopology } from '../support/broker.js';
import { captureLog, makeMessages } from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function topologyFor(bindingKeys: string[]): Promise<TestTopology> {
  const topology = await declareTestTopology({ bindingKeys, prefix: 'publish' });
  cleanups.push(() => topology.cleanup());
  return topology;
}

async function startedPublisher(
  exchange: string,
  extra: Partial<RabbitMqOptions> = {},
): Promise<{ publisher: RabbitMqPublisher; logText: () => string }> {
  const { log, text } = captureLog();
  const publisher = createRabbitMqPublisher(
    {
      url: AMQP_URL,
      exchange,
      queues: [],
      reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
      clientName: 'warehouse-ingest-test',
      ...extra,
    },
    log,
  );
  cleanups.push(() => publisher.close());
  await publisher.start();
  return { publisher, logText: text };
}

describe('RabbitMQ publisher', () => {
  it('publishes with the routing key, the body and every property', async () => {
    const topology = await topologyFor(['sales-orders.*']);
    const ownQueue = uniqueName('publish.own');
    cleanups.push(() => topology.withChannel((ch) => ch.deleteQueue(ownQueue)));
    const { publisher, logText } = await startedPublisher(topology.exchange, {
      queues: [{ name: ownQueue, bindingKeys: ['#'] }],
    });
    expect(publisher.connected).toBe(true);

    const messages = makeMessages(3, 'sales-orders.b-1');
    await publisher.publish(messages);

    const received = await topology.messages();
    expect(received).toHaveLength(3);
    received.forEach((got, index) => {
      const sent = messages[index]!;
      expect(got.routingKey).toBe('sales-orders.b-1');
      expect(got.content).toEqual(JSON.parse(sent.body.toString('utf8')));
      expect(got.properties).toMatchObject({
        messageId: sent.messageId,
        correlationId: sent.correlationId,
        type: 'sales-orders',
        contentType: 'application/json',
        deliveryMode: 2,
        timestamp: Math.floor(sent.timestamp / 1000),
        headers: { 'business-id': 'b-1', source: 'test' },
      });
    });
    // The publisher declared its own durable queue and binding too.
    const own = await topology.withChannel((ch) => ch.checkQueue(ownQueue));
    expect(own.messageCount).toBe(3);
    expect(logText()).not.toContain('guest:guest');
  });

  it('with messageFormat lean, publishes the id, the content type and persistence, nothing else', async () => {
    const topology = await topologyFor(['sales-orders.*']);
    const { publisher } = await startedPublisher(topology.exchange, { messageFormat: 'lean' });

    const messages = makeMessages(2, 'sales-orders.b-1');
    await publisher.publish(messages);

    const received = await topology.messages();
    expect(received).toHaveLength(2);
    received.forEach((got, index) => {
      const sent = messages[index]!;
      expect(got.routingKey).toBe('sales-orders.b-1');
      expect(got.content).toEqual(JSON.parse(sent.body.toString('utf8')));
      expect(got.properties).toMatchObject({
        messageId: sent.messageId,
        contentType: 'application/json',
        deliveryMode: 2,
      });
      expect(got.properties.correlationId).toBeUndefined();
      expect(got.properties.type).toBeUndefined();
      expect(got.properties.timestamp).toBeUndefined();
      // Only what the broker adds itself (a quorum queue's x-delivery-count).
      const ours = Object.keys(got.properties.headers ?? {}).filter((k) => !k.startsWith('x-'));
      expect(ours).toEqual([]);
    });
  });

  it('resolves a 5000-message batch only when all of them are in the queue', async () => {
    const topology = await topologyFor(['#']);
    const { publisher } = await startedPublisher(topology.exchange);
    const messages = makeMessages(5000, 'sales-orders.b-1');

    const began = performance.now();
    await publisher.publish(messages);
    const seconds = (performance.now() - began) / 1000;

    expect(await topology.count()).toBe(5000);
    console.info(
      `5000 × 1 KiB confirmed in ${(seconds * 1000).toFixed(0)} ms ≈ ${Math.round(5000 / seconds)} msg/s`,
    );
  });

  it('rejects a batch with an unroutable message while a concurrent routable batch succeeds', async () => {
    const topology = await topologyFor(['sales-orders.#']);
    const { publisher } = await startedPublisher(topology.exchange);
    const routable = makeMessages(200, 'sales-orders.b-1');
    const mixed = [...makeMessages(100, 'sales-orders.b-2'), ...makeMessages(1, 'nowhere.b-2')];

    const [good, bad] = await Promise.allSettled([
      publisher.publish(routable),
      publisher.publish(mixed),
    ]);

    expect(good.status).toBe('fulfilled');
    expect(bad.status).toBe('rejected');
    const error = (bad as PromiseRejectedResult).reason as unknown;
    expect(error).toBeInstanceOf(PublishFailed);
    expect((error as PublishFailed).status).toBe(503);
    expect((error as PublishFailed).message).toMatch(
      /no queue is bound for routing key 'nowhere\.b-2'/i,
    );
    expect(await topology.count()).toBeGreaterThanOrEqual(200);
    // The unroutable message is acked without waiting for disk, so the mixed batch may fail
    // before its routable messages are confirmed; they still arrive.
    await expect.poll(() => topology.count()).toBe(300);

    // The returns were consumed by their own acks: a retry of those ids, now routable, succeeds.
    const retried = mixed.map((m) => ({ ...m, routingKey: 'sales-orders.b-2' }));
    await publisher.publish(retried);
    expect(await topology.count()).toBe(401);
  });

  it('rejects while the exchange is deleted and recovers once it exists again', async () => {
    const topology = await topologyFor(['#']);
    const { publisher, logText } = await startedPublisher(topology.exchange);
    await publisher.publish(makeMessages(1, 'k.1'));

    await topology.withChannel((ch) => ch.deleteExchange(topology.exchange));
    await expect(publisher.publish(makeMessages(50, 'k.1'))).rejects.toThrow(PublishFailed);

    await topology.declare(); // the exchange back, and the queue bound to it again
    const retry = makeMessages(10, 'k.1');
    await expect
      .poll(
        () =>
          publisher.publish(retry).then(
            () => 'published',
            (e: Error) => e.message,
          ),
        { timeout: 10_000 },
      )
      .toBe('published');
    expect(logText()).toMatch(/closed the publishing channel/);
    const ids = (await topology.messages()).map((m) => m.properties.messageId as string);
    expect(ids.slice(-10)).toEqual(retry.map((m) => m.messageId));
  });

  it('reports readiness problems for a deleted queue or exchange', async () => {
    const topology = await topologyFor(['#']);
    const ownQueue = uniqueName('publish.ready');
    cleanups.push(() => topology.withChannel((ch) => ch.deleteQueue(ownQueue)));
    const { publisher } = await startedPublisher(topology.exchange, {
      queues: [{ name: ownQueue, bindingKeys: ['#'] }],
    });
    expect(await publisher.readiness()).toEqual({ ready: true, problems: [] });

    await topology.withChannel((ch) => ch.deleteQueue(ownQueue));
    const check = await publisher.readiness();
    expect(check.ready).toBe(false);
    expect(check.problems).toEqual([`queue '${ownQueue}' does not exist on the broker`]);
  });

  it('logs a topology conflict clearly, stays unready and fails fast', async () => {
    const exchange = uniqueName('publish.direct');
    const topology = await topologyFor(['#']);
    await topology.withChannel((ch) =>
      ch.assertExchange(exchange, 'direct', { durable: false, autoDelete: false }),
    );
    cleanups.push(() => topology.withChannel((ch) => ch.deleteExchange(exchange)));

    const { publisher, logText } = await startedPublisher(exchange);

    expect(publisher.connected).toBe(false);
    expect(logText()).toMatch(/refused the configured topology/);
    expect(logText()).toMatch(/PRECONDITION_FAILED/);
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(PublishFailed);
    expect((await publisher.readiness()).ready).toBe(false);
  });

  it('close waits for in-flight batches, then refuses new ones and never reconnects', async () => {
    const topology = await topologyFor(['#']);
    const { publisher } = await startedPublisher(topology.exchange);
    const states: string[] = [];
    publisher.onStateChange((state) => states.push(state));

    const inFlight = publisher.publish(makeMessages(2000, 'k'));
    await publisher.close();

    await expect(inFlight).resolves.toBeUndefined();
    expect(await topology.count()).toBe(2000);
    expect(publisher.state).toBe('closed');
    expect(states).toEqual(['closed']);
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(/shutting down/);
    expect((await publisher.readiness()).ready).toBe(false);
  });
});

describe('reconnectDelay', () => {
  it('grows exponentially with jitter and never exceeds the cap', () => {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const step = Math.min(30_000, 500 * 2 ** attempt);
      const delay = reconnectDelay(attempt, 500, 30_000);
      expect(delay).toBeGreaterThanOrEqual(step / 2);
      expect(delay).toBeLessThanOrEqual(step);
    }
  });
});
