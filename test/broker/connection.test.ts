import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  brokerNodeOf,
  brokerNodes,
  keepBrokerConnection,
  nodeAddress,
  openBrokerConnection,
} from '../../src/broker/connection.js';
import { BrokerUnreachable } from '../../src/operator-errors.js';
import { createLogger } from '../../src/log.js';
import { createRabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL, declareTestTopology } from '../support/broker.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { makeMessages } from '../publish/helpers.js';

/**
 * The node list of broker/connection.ts on one real broker: two TCP proxies in front of it stand
 * for two nodes, so a node can be refused or cut without touching the broker. The real
 * three-node cluster, with nodes killed, is the `fleet` project's (test/fleet/).
 */
const target = { host: '127.0.0.1', port: Number(new URL(AMQP_URL).port || 5672) };
const REFUSED = 'amqp://guest:s3cret@127.0.0.1:1'; // nothing listens on port 1
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function twoNodes(): Promise<[TcpProxy, TcpProxy]> {
  const a = await startTcpProxy(target);
  const b = await startTcpProxy(target);
  open.push(a, b);
  return [a, b];
}

describe('a list of broker nodes', () => {
  it('skips a node that refuses the connection and says which node it is on', async () => {
    const nodes = { urls: [REFUSED, AMQP_URL], start: 0 };
    const model = await openBrokerConnection({ url: nodes.urls, name: 'test', nodes });
    open.push(model);
    expect(brokerNodeOf(model)).toBe(nodeAddress(AMQP_URL));
    expect(nodes.start).toBe(1);
  });

  it('names every node it tried when none takes the connection, never a password', async () => {
    const error = await openBrokerConnection({
      url: [REFUSED, 'amqp://guest:s3cret@127.0.0.1:2'],
      name: 'test',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrokerUnreachable);
    expect((error as Error).message).toContain('127.0.0.1:1: ');
    expect((error as Error).message).toContain('127.0.0.1:2: ');
    expect((error as Error).message).not.toContain('s3cret');
  });

  it('shuffles the list once, and keeps every node in it', () => {
    const urls = ['amqp://h1', 'amqp://h2', 'amqp://h3', 'amqp://h4'];
    const orders = new Set(Array.from({ length: 50 }, () => brokerNodes(urls).urls.join(' ')));
    expect(orders.size).toBeGreaterThan(1);
    for (const order of orders) expect(order.split(' ').sort()).toEqual(urls);
  });

  it("a kept connection's first attempt resolves when no broker answers (it attaches later), and rejects only when the broker refuses the set-up", async () => {
    // Issue 38, item 3: `serve` awaited this, and exited 1 when the broker was not up yet.
    const failed: string[] = [];
    const absent = keepBrokerConnection({
      url: REFUSED,
      name: 'test absent',
      reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
      setUp: async () => undefined,
      onFailed: (error) => failed.push(error.message),
    });
    open.push(absent);
    await expect(absent.firstAttempt).resolves.toBeUndefined();
    expect(failed[0]).toContain('ECONNREFUSED');
    // A broker that answers and refuses what is asked of it: a configuration problem, reported.
    const refusing = keepBrokerConnection({
      url: AMQP_URL,
      name: 'test refused',
      reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
      setUp: async (model) => {
        const channel = await model.createChannel();
        channel.on('error', () => undefined);
        await channel.checkQueue(`no-such-queue-${Date.now()}`); // 404 closes the channel, not the connection
      },
    });
    open.push(refusing);
    await expect(refusing.firstAttempt).rejects.toThrow(/NOT_FOUND/);
  });

  it('a kept connection fails over to the next node when its node is lost, and reports the node lost', async () => {
    const [a, b] = await twoNodes();
    const lost: Array<string | undefined> = [];
    const on: string[] = [];
    const kept = keepBrokerConnection({
      url: [a.urlFor(AMQP_URL), b.urlFor(AMQP_URL)],
      name: 'test kept',
      reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
      setUp: async (model) => void on.push(brokerNodeOf(model) ?? '?'),
      onLost: (_error, node) => lost.push(node),
    });
    open.push(kept);
    await kept.firstAttempt;
    const first = on[0];
    const [down, other] = first === nodeAddress(a.urlFor(AMQP_URL)) ? [a, b] : [b, a];
    down.cut({ refuse: true });
    await vi.waitFor(() => expect(on).toHaveLength(2), { timeout: 5000, interval: 20 });
    expect(lost).toEqual([first]);
    expect(on[1]).toBe(nodeAddress(other.urlFor(AMQP_URL)));
  });

  it('the publisher answers a batch cut with its node as failed, then publishes on the other node', async () => {
    const [a, b] = await twoNodes();
    const topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'failover' });
    open.push({ close: () => topology.cleanup() });
    const publisher = createRabbitMqPublisher(
      {
        url: [a.urlFor(AMQP_URL), b.urlFor(AMQP_URL)],
        exchange: topology.exchange,
        reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
      },
      createLogger({ level: 'silent' }),
    );
    open.push(publisher);
    await publisher.start();
    const first = publisher.node;
    const [down, other] = first === nodeAddress(a.urlFor(AMQP_URL)) ? [a, b] : [b, a];
    const batch = makeMessages(2000, 'sales-orders.ACME');
    down.cutAfter(200_000, { refuse: true });
    await expect(publisher.publish(batch)).rejects.toThrow();
    await vi.waitFor(() => expect(publisher.node).toBe(nodeAddress(other.urlFor(AMQP_URL))), {
      timeout: 5000,
      interval: 20,
    });
    await publisher.publish(batch);
    const ids = new Set((await topology.messages()).map((m) => m.properties.messageId));
    expect(ids).toEqual(new Set(batch.map((m) => m.messageId)));
  });
});
