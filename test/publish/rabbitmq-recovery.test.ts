import { afterEach, describe, expect, it } from 'vitest';
import { PublishFailed } from '../../src/errors.js';
import {
  createRabbitMqPublisher,
  type RabbitMqOptions,
  type RabbitMqPublisher,
} from '../../src/publish/rabbitmq.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { captureLog, makeMessages } from './helpers.js';

/** Everything here goes through a proxy the test can cut; the machine's broker is never touched. */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(): Promise<{ topology: TestTopology; proxy: TcpProxy }> {
  const topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'recovery' });
  cleanups.push(() => topology.cleanup());
  const amqp = new URL(AMQP_URL);
  const proxy = await startTcpProxy({ host: amqp.hostname, port: Number(amqp.port || 5672) });
  cleanups.push(() => proxy.close());
  return { topology, proxy };
}

function publisherVia(proxy: TcpProxy, exchange: string, extra: Partial<RabbitMqOptions> = {}) {
  const { log, text, lines } = captureLog();
  const publisher: RabbitMqPublisher = createRabbitMqPublisher(
    {
      url: proxy.urlFor(AMQP_URL),
      exchange,
      publishTimeoutMs: 10_000,
      reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
      ...extra,
    },
    log,
  );
  cleanups.push(() => publisher.close());
  return { publisher, logText: text, logLines: lines };
}

describe('RabbitMQ publisher recovery', () => {
  it('fails every pending batch promptly when the connection drops mid-batch, reconnects, and a retry succeeds', async () => {
    const { topology, proxy } = await setUp();
    const { publisher, logText, logLines } = publisherVia(proxy, topology.exchange);
    await publisher.start();
    await publisher.publish(makeMessages(1, 'warm.up'));
    await topology.messages();

    const big = makeMessages(5000, 'sales-orders.b-1');
    const other = makeMessages(500, 'sales-orders.b-2');
    proxy.cutAfter(1_000_000); // about a fifth of the way into the big batch
    const began = performance.now();
    const outcomes = await Promise.allSettled([publisher.publish(big), publisher.publish(other)]);
    const elapsedMs = performance.now() - began;

    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(PublishFailed);
    }
    expect(elapsedMs).toBeLessThan(2000); // the publish timeout is 10 s: no waiting for it
    expect(publisher.connected).toBe(false);
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(/not reachable/);

    await expect.poll(() => publisher.connected, { timeout: 10_000 }).toBe(true);
    await publisher.publish(big);

    const queued = (await topology.messages()).map((m) => m.properties.messageId as string);
    const bigIds = new Set(big.map((m) => m.messageId));
    const otherIds = new Set(other.map((m) => m.messageId));
    // Everything of the retry arrived; copies from the cut attempt carry the same ids.
    expect(new Set(queued.filter((id) => bigIds.has(id))).size).toBe(5000);
    expect(queued.every((id) => bigIds.has(id) || otherIds.has(id))).toBe(true);

    const messages = logLines().map((line) => `${String(line.level)}: ${String(line.msg)}`);
    expect(messages).toContain('warn: lost the connection to the message broker; reconnecting');
    expect(messages).toContain('info: reconnected to the message broker');
    expect(logText()).not.toContain('guest:guest');
    expect(logText()).not.toContain(':guest@');
  });

  it('starts without a broker, answers 503 and becomes ready when the broker is reachable', async () => {
    const { topology, proxy } = await setUp();
    proxy.cut({ refuse: true });
    const { publisher, logText } = publisherVia(proxy, topology.exchange);

    await publisher.start();

    expect(publisher.state).toBe('connecting');
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(PublishFailed);
    const check = await publisher.readiness();
    expect(check.ready).toBe(false);
    expect(check.problems[0]).toMatch(
      /^not connected to the message broker at amqp:\/\/\*\*\*@127\.0\.0\.1:\d+/,
    );
    expect(logText()).toMatch(/could not connect to the message broker/);

    proxy.restore();
    await expect
      .poll(async () => (await publisher.readiness()).ready, { timeout: 10_000 })
      .toBe(true);
    await publisher.publish(makeMessages(3, 'k'));
    expect(await topology.count()).toBe(3);
    expect(logText()).not.toContain(':guest@');
  });

  it('times a silent broker out, and ignores the confirms that come late', async () => {
    const { topology, proxy } = await setUp();
    const { publisher } = publisherVia(proxy, topology.exchange, { publishTimeoutMs: 300 });
    await publisher.start();

    proxy.hold();
    const began = performance.now();
    const stuck = publisher.publish(makeMessages(20, 'k'));
    await expect(stuck).rejects.toThrow(/did not confirm 20 of 20 messages within 300 ms/);
    expect(performance.now() - began).toBeGreaterThanOrEqual(290);

    proxy.release(); // the late confirms arrive now and must change nothing
    await publisher.publish(makeMessages(5, 'k'));
    await expect(stuck).rejects.toThrow(PublishFailed);
    expect(await topology.count()).toBe(25);
    expect(publisher.connected).toBe(true);
  });

  it('close ends the retry loop while the broker is unreachable', async () => {
    const { topology, proxy } = await setUp();
    proxy.cut({ refuse: true });
    const { publisher, logText } = publisherVia(proxy, topology.exchange, {
      reconnect: { initialDelayMs: 5, maxDelayMs: 10 },
    });
    await publisher.start();
    await expect.poll(() => logText().match(/could not connect/g)?.length ?? 0).toBeGreaterThan(3);

    await publisher.close();

    expect(publisher.state).toBe('closed');
    const attemptsAtClose = logText().match(/could not connect/g)?.length;
    proxy.restore();
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(/shutting down/);
    expect(logText().match(/could not connect/g)?.length).toBe(attemptsAtClose);
    expect(proxy.accepted).toBe(0);
  });

  it('does not reconnect after close', async () => {
    const { topology, proxy } = await setUp();
    // The closed publisher would retry sooner than the control one, so once the control one has
    // reconnected, a reconnect of the closed one would have shown up in the proxy's count.
    const { publisher: closed } = publisherVia(proxy, topology.exchange, {
      reconnect: { initialDelayMs: 10, maxDelayMs: 20 },
    });
    const { publisher: control } = publisherVia(proxy, topology.exchange, {
      reconnect: { initialDelayMs: 100, maxDelayMs: 200 },
    });
    await closed.start();
    await control.start();
    expect(proxy.accepted).toBe(2);

    await closed.close();
    await expect.poll(() => proxy.connections).toBe(1); // the proxy sees the FIN a moment later
    const controlStates: string[] = [];
    control.onStateChange((state) => controlStates.push(state));
    proxy.cut();
    await expect
      .poll(() => controlStates, { timeout: 10_000 })
      .toEqual(['reconnecting', 'connected']);

    expect(proxy.accepted).toBe(3);
    expect(closed.state).toBe('closed');
  });
});
