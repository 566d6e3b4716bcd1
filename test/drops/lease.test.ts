import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createRabbitMqLease, type DropLease } from '../../src/drops/lease.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const log = createLogger({ level: 'silent' });
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function lease(pipeline: string, url = AMQP_URL): DropLease {
  const made = createRabbitMqLease(
    { url, pipeline, reconnect: { initialDelayMs: 50, maxDelayMs: 300 } },
    log,
  );
  cleanups.push(() => made.close());
  return made;
}

describe('drop lease on RabbitMQ (single active consumer)', () => {
  it('is held by exactly one of several workers, and passes to a standby when the holder stops', async () => {
    const pipeline = uniqueName('lease');
    const workers = [lease(pipeline), lease(pipeline), lease(pipeline)];
    await Promise.all(workers.map((w) => w.acquire(0)));
    await expect.poll(() => workers.filter((w) => w.held).length, { timeout: 10_000 }).toBe(1);
    const holder = workers.find((w) => w.held)!;
    const standbys = workers.filter((w) => w !== holder);
    expect(await standbys[0]!.acquire(300)).toBe(false);

    await holder.close();
    await expect.poll(() => standbys.filter((w) => w.held).length, { timeout: 10_000 }).toBe(1);
    expect(holder.held).toBe(false);
  });

  it('is lost at once when the holder is cut off from the broker, and taken over; the cut worker stands by after it reconnects', async () => {
    const pipeline = uniqueName('lease');
    const amqp = new URL(AMQP_URL);
    const proxy = await startTcpProxy({ host: amqp.hostname, port: Number(amqp.port || 5672) });
    cleanups.push(() => proxy.close());
    const cutOff = lease(pipeline, proxy.urlFor(AMQP_URL));
    expect(await cutOff.acquire(10_000)).toBe(true);
    const standby = lease(pipeline);
    expect(await standby.acquire(200)).toBe(false);

    proxy.cut({ refuse: true });
    await expect.poll(() => cutOff.held, { timeout: 5_000 }).toBe(false);
    expect(await standby.acquire(10_000)).toBe(true);

    proxy.restore();
    await expect.poll(() => proxy.connections, { timeout: 10_000 }).toBeGreaterThan(0); // reconnected
    expect(await cutOff.acquire(500)).toBe(false);
    expect(standby.held).toBe(true);
  });

  it('waits at most the given time, and stands by without failing while the broker cannot be reached', async () => {
    const unreachable = lease(uniqueName('lease'), 'amqp://guest:guest@127.0.0.1:1');
    const began = performance.now();
    expect(await unreachable.acquire(300)).toBe(false);
    expect(performance.now() - began).toBeLessThan(5_000);
  });
});
