import type { TestProject } from 'vitest/node';
import { startRabbitCluster } from '../support/rabbit-cluster.js';

/** Fixed ports of the fleet project (docs/testing.md): AMQP 5681–5683, distribution 25681–25683. */
const AMQP_PORTS = [5681, 5682, 5683];
const DIST_PORTS = [25681, 25682, 25683];

/**
 * The `fleet` project's three-node RabbitMQ cluster (test/support/rabbit-cluster.ts), started once
 * per run and torn down after. Anything wrong fails the run here, loudly: no test skips.
 */
export default async function startCluster(project: TestProject): Promise<() => Promise<void>> {
  const { cluster, seconds, teardown } = await startRabbitCluster({
    amqpPorts: AMQP_PORTS,
    distPorts: DIST_PORTS,
    label: 'fleet',
  });
  console.log(
    `fleet: three-node RabbitMQ cluster up in ${seconds.toFixed(1)} s (${cluster.nodes.map((n) => `${n.id} 127.0.0.1:${n.port}`).join(', ')})`,
  );
  project.provide('rabbitCluster', cluster);
  return teardown;
}
