import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import {
  bootNode,
  type ClusterInfo,
  type ClusterNode,
  ctl,
  pidFile,
} from '../support/rabbit-cluster.js';
import { acceptsConnections } from '../support/tcp-probe.js';

const run = promisify(execFile);

/** Fixed ports of the fleet project (docs/testing.md): AMQP 5681–5683, distribution 25681–25683. */
const AMQP_PORTS = [5681, 5682, 5683];
const DIST_PORTS = [25681, 25682, 25683];

/**
 * The `fleet` project's three-node RabbitMQ cluster, started once per run and torn down after.
 * Nodes n1..n3 get names unique to the run and folders under one temp dir owned by rabbitmq;
 * they share a cookie of their own (not the machine's broker's) and the one epmd. The
 * consistent-hash plugin is enabled. Anything wrong fails the run here, loudly: no test skips.
 */
export default async function startCluster(project: TestProject): Promise<() => Promise<void>> {
  for (const port of [...AMQP_PORTS, ...DIST_PORTS]) {
    if (await acceptsConnections(port))
      throw new Error(
        `Port ${port} is taken: the fleet project's cluster needs AMQP ports 5681–5683 and distribution ports 25681–25683 free (another run, or a cluster left behind?).`,
      );
  }
  const root = mkdtempSync(path.join(tmpdir(), 'rabbit-cluster-'));
  const home = path.join(root, 'home');
  mkdirSync(home);
  writeFileSync(path.join(home, '.erlang.cookie'), randomBytes(16).toString('hex'));
  chmodSync(path.join(home, '.erlang.cookie'), 0o400);
  const run_ = `${process.pid}-${randomBytes(3).toString('hex')}`;
  const nodes: ClusterNode[] = AMQP_PORTS.map((port, i) => {
    const id = `n${i + 1}`;
    const dir = path.join(root, id);
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, 'rabbitmq.conf'),
      `listeners.tcp.default = 127.0.0.1:${port}\nloopback_users = none\n`,
    );
    writeFileSync(path.join(dir, 'plugins'), '[rabbitmq_consistent_hash_exchange].\n');
    writeFileSync(path.join(dir, 'rabbitmq-env.conf'), '');
    return {
      id,
      nodeName: `${id}-${run_}@localhost`,
      port,
      distPort: DIST_PORTS[i] as number,
      dir,
      url: `amqp://guest:guest@127.0.0.1:${port}`,
    };
  });
  await run('chown', ['-R', 'rabbitmq:rabbitmq', root]);
  chmodSync(root, 0o755);
  const cluster: ClusterInfo = { nodes, home };

  const teardown = async () => {
    for (const node of nodes) {
      try {
        const pid = Number(readFileSync(pidFile(node), 'utf8').trim());
        if (pid) process.kill(pid, 'SIGKILL');
      } catch {
        // not running
      }
    }
    rmSync(root, { recursive: true, force: true });
  };

  try {
    const started = Date.now();
    await Promise.all(nodes.map((node) => bootNode(cluster, node)));
    const [first, ...others] = nodes as [ClusterNode, ...ClusterNode[]];
    for (const node of others) {
      await ctl(cluster, node, ['stop_app']);
      await ctl(cluster, node, ['join_cluster', first.nodeName]);
      await ctl(cluster, node, ['start_app']);
    }
    const status = await ctl(cluster, first, ['cluster_status', '--formatter', 'json']);
    const running = (JSON.parse(status) as { running_nodes?: string[] }).running_nodes ?? [];
    if (running.length !== 3)
      throw new Error(`the cluster runs ${running.length} node(s), not 3: ${status}`);
    console.log(
      `fleet: three-node RabbitMQ cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s (${nodes.map((n) => `${n.id} 127.0.0.1:${n.port}`).join(', ')})`,
    );
  } catch (error) {
    await teardown();
    throw error;
  }
  project.provide('rabbitCluster', cluster);
  return teardown;
}
