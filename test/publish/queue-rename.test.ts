/**
 * The documented way from a classic records queue to a quorum one (docs/operations-instances.md,
 * "Queue types"): the queue gets a new name and `replaces: <old name>`. On the real broker, the
 * old queue loses its bindings once the new one has them, so a record lands in the new queue only;
 * the old one keeps what it held for its consumers, and the log says how many are left until it
 * is deleted.
 */
import { connect } from 'amqplib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createPublisher } from '../../src/publish/index.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { captureLog, makeMessages } from './helpers.js';

const exchange = uniqueName('rename.x');
const oldQueue = uniqueName('rename.classic');
const newQueue = uniqueName('rename.quorum');

type Queue = {
  name: string;
  bindingKeys: string[];
  arguments?: Record<string, string>;
  replaces?: string;
};
/** The publisher `serve` makes from the configuration's `broker` section. */
const publisherFor = (queues: Queue[], log = createLogger({ level: 'silent' })) =>
  createPublisher(
    {
      environment: 'development',
      dataDirectory: '/nonexistent',
      broker: {
        url: AMQP_URL,
        exchange,
        queues,
        messageFormat: 'full',
        publishTimeoutMs: 10_000,
        reconnect: { initialDelayMs: 100, maxDelayMs: 1000 },
      },
    },
    log,
  );

async function counts(): Promise<{ old: number | 'gone'; new: number }> {
  const connection = await connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    const fresh = (await channel.checkQueue(newQueue)).messageCount;
    const old = await channel.checkQueue(oldQueue).then(
      (q) => q.messageCount,
      () => 'gone' as const,
    );
    return { old, new: fresh };
  } finally {
    await connection.close().catch(() => undefined);
  }
}

afterAll(async () => {
  const connection = await connect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.deleteQueue(oldQueue);
  await channel.deleteQueue(newQueue);
  await channel.deleteExchange(exchange);
  await connection.close();
});

describe('renaming a records queue (classic → quorum)', () => {
  it('sends records to the new queue only, and reports the old one draining until it is deleted', async () => {
    // The earlier version: a classic queue bound "#", holding one record.
    const before = publisherFor([
      { name: oldQueue, bindingKeys: ['#'], arguments: { 'x-queue-type': 'classic' } },
    ]);
    await before.start();
    await before.publish(makeMessages(1, 'sales-orders.ACME'));
    await before.close();

    // The documented rename: a new name (quorum by default), the same binding keys, `replaces`.
    const { log, lines } = captureLog();
    const after = publisherFor([{ name: newQueue, bindingKeys: ['#'], replaces: oldQueue }], log);
    await after.start();
    try {
      await after.publish(makeMessages(3, 'sales-orders.ACME'));
      // Confirmed publishes are routed already: the counts are final.
      expect(await counts()).toEqual({ old: 1, new: 3 });
      expect(lines()).toContainEqual(
        expect.objectContaining({ queue: oldQueue, replacedBy: newQueue, messages: 1 }),
      );
    } finally {
      await after.close();
    }

    // Its consumers drain it, the operator deletes it; the next start says `replaces` can go.
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.purgeQueue(oldQueue);
    await channel.deleteQueue(oldQueue);
    await connection.close();
    const { log: laterLog, lines: later } = captureLog();
    const again = publisherFor(
      [{ name: newQueue, bindingKeys: ['#'], replaces: oldQueue }],
      laterLog,
    );
    await again.start();
    try {
      await again.publish(makeMessages(1, 'sales-orders.ACME'));
      expect(await counts()).toEqual({ old: 'gone', new: 4 });
      await vi.waitFor(() =>
        expect(later()).toContainEqual(
          expect.objectContaining({ queue: oldQueue, messages: null }),
        ),
      );
      expect(await again.readiness()).toEqual({ ready: true, problems: [] });
    } finally {
      await again.close();
    }
  });
});
