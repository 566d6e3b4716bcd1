import { afterEach, expect, inject, it } from 'vitest';
import { createRabbitMqLease, type DropLease } from '../../src/drops/lease.js';
import { createLogger } from '../../src/log.js';
import { uniqueName } from '../support/broker.js';
import { killNode, nodeByPort, restoreCluster } from '../support/rabbit-cluster.js';

/**
 * The S3 drop lease on a cluster: the holder's node is killed (it may also lead the lease's
 * quorum queue). The holder loses the lease, a standby on another node takes it, and the two
 * never hold it at once.
 */
const cluster = inject('rabbitCluster');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await restoreCluster(cluster);
});

function lease(pipeline: string, urls: readonly string[], lines: string[]): DropLease {
  const made = createRabbitMqLease(
    {
      url: urls,
      pipeline,
      heartbeatSeconds: 2,
      reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
    },
    createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(line) },
    }),
  );
  cleanups.push(() => made.close());
  return made;
}

it('the lease holder’s node killed: a standby on another node takes the lease, never two holders', async () => {
  const pipeline = uniqueName('fleet-lease');
  const holderLines: string[] = [];
  const holder = lease(
    pipeline,
    cluster.nodes.map((n) => n.url),
    holderLines,
  );
  expect(await holder.acquire(20_000)).toBe(true);
  const holding = holderLines
    .map((line) => JSON.parse(line) as { msg: string; node?: string })
    .find((line) => line.msg.startsWith('holding the drop lease'));
  const holderNode = nodeByPort(cluster, holding!.node!);
  const others = cluster.nodes.filter((n) => n !== holderNode);
  const standby = lease(
    pipeline,
    others.map((n) => n.url),
    [],
  );
  expect(await standby.acquire(500)).toBe(false);

  let both = 0;
  const watch = setInterval(() => {
    if (holder.held && standby.held) both += 1;
  }, 10);
  try {
    const killedAt = performance.now();
    await killNode(holderNode);
    expect(await standby.acquire(60_000)).toBe(true);
    const takenAfter = performance.now() - killedAt;
    expect(holder.held).toBe(false);
    // The old holder fails over to a surviving node and stands by there.
    await expect
      .poll(
        () =>
          holderLines.some((line) => line.includes('lost the broker connection of the drop lease')),
        { timeout: 10_000 },
      )
      .toBe(true);
    expect(await holder.acquire(1000)).toBe(false);
    expect(both, 'samples with two holders').toBe(0);
    console.log(
      `[fleet] lease: holder's node ${holderNode.id} killed; the standby held the lease ${(takenAfter / 1000).toFixed(2)} s later`,
    );
  } finally {
    clearInterval(watch);
  }
});
