import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { acceptsConnections } from './tcp-probe.js';

const run = promisify(execFile);
/** The scripts themselves, not the /usr/sbin wrappers (see rabbitmq-node.ts: they swap HOME, so the cookie). */
export const RABBIT_BIN = '/usr/lib/rabbitmq/bin';

/**
 * One node of a three-node cluster, as `startRabbitCluster` started it (for the fleet project's
 * global setup, test/setup/rabbit-cluster.ts, or the cluster bench, bench/cluster.mjs). Plain data, so it can be handed to the test workers with `provide`/`inject`.
 */
export interface ClusterNode {
  /** `n1` … `n3`: the short name tests use. */
  readonly id: string;
  /** Erlang node name, unique to the run (`n1-<pid>-<random>@localhost`). */
  readonly nodeName: string;
  readonly port: number;
  readonly distPort: number;
  /** The node's folder (config, mnesia, logs, pid file), owned by rabbitmq. */
  readonly dir: string;
  /** `amqp://guest:guest@127.0.0.1:<port>`. */
  readonly url: string;
}

export interface ClusterInfo {
  readonly nodes: readonly ClusterNode[];
  /** Shared by the nodes: HOME holds the cluster's own Erlang cookie. */
  readonly home: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    rabbitCluster: ClusterInfo;
  }
}

export function nodeEnv(cluster: ClusterInfo, node: ClusterNode): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: cluster.home,
    LANG: 'C.UTF-8',
    RABBITMQ_NODENAME: node.nodeName,
    RABBITMQ_NODE_PORT: String(node.port),
    RABBITMQ_DIST_PORT: String(node.distPort),
    RABBITMQ_MNESIA_BASE: path.join(node.dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(node.dir, 'log'),
    RABBITMQ_PID_FILE: pidFile(node),
    RABBITMQ_CONFIG_FILE: path.join(node.dir, 'rabbitmq'),
    RABBITMQ_ADVANCED_CONFIG_FILE: path.join(node.dir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(node.dir, 'plugins'),
    RABBITMQ_CONF_ENV_FILE: path.join(node.dir, 'rabbitmq-env.conf'),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    ERL_FLAGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  };
}

export const pidFile = (node: ClusterNode) => path.join(node.dir, 'pid');

/** `rabbitmqctl -n <node> …` for one node of the cluster; throws with its output on failure. */
export async function ctl(
  cluster: ClusterInfo,
  node: ClusterNode,
  args: readonly string[],
  timeoutMs = 60_000,
): Promise<string> {
  try {
    const { stdout } = await run(
      path.join(RABBIT_BIN, 'rabbitmqctl'),
      ['-n', node.nodeName, ...args],
      {
        env: nodeEnv(cluster, node),
        cwd: node.dir,
        timeout: timeoutMs,
      },
    );
    return stdout;
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `rabbitmqctl -n ${node.nodeName} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

/** Boots one node (`rabbitmq-server -detached`) and waits until it runs its app. */
export async function bootNode(cluster: ClusterInfo, node: ClusterNode): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(path.join(RABBIT_BIN, 'rabbitmq-server'), ['-detached'], {
      env: nodeEnv(cluster, node),
      cwd: '/',
      stdio: 'ignore',
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`rabbitmq-server -detached for ${node.id} exited with ${code}`)),
    );
  });
  try {
    await ctl(cluster, node, ['wait', '--timeout', '90', pidFile(node)], 100_000);
  } catch (error) {
    const logFile = path.join(node.dir, 'log', `${node.nodeName}.log`);
    const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3000) : '(no log)';
    throw new Error(`RabbitMQ node ${node.id} did not start: ${(error as Error).message}\n${tail}`);
  }
}

function osPid(node: ClusterNode): number | undefined {
  try {
    return Number(readFileSync(pidFile(node), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Loses a node hard: `kill -9` of its Erlang VM (no goodbye to clients or peers), and waits until
 * the process is gone. `bringBack` starts it again with the same data; it rejoins the cluster.
 */
export async function killNode(node: ClusterNode): Promise<void> {
  const pid = osPid(node);
  if (pid === undefined || !alive(pid)) throw new Error(`node ${node.id} is not running`);
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 10_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`node ${node.id} (pid ${pid}) survived kill -9`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A clean stop of the node's RabbitMQ application (`rabbitmqctl stop_app`); the VM stays up. */
export async function stopApp(cluster: ClusterInfo, node: ClusterNode): Promise<void> {
  await ctl(cluster, node, ['stop_app']);
}

/**
 * Puts the node back as the cluster had it: boots a killed VM, starts a stopped app, and waits
 * until it runs and accepts AMQP again. A node that is already fine is left alone.
 */
export async function bringBack(cluster: ClusterInfo, node: ClusterNode): Promise<void> {
  const pid = osPid(node);
  if (pid === undefined || !alive(pid)) await bootNode(cluster, node);
  else if (!(await acceptsConnections(node.port))) await ctl(cluster, node, ['start_app']);
  await ctl(cluster, node, ['await_startup', '--timeout', '90'], 100_000);
}

/** Every node runs and listens (what afterEach restores and asserts). */
export async function restoreCluster(cluster: ClusterInfo): Promise<void> {
  for (const node of cluster.nodes) await bringBack(cluster, node);
}

/** Which node a client connected to, from the port in the `host:port` it reports. */
export function nodeByPort(cluster: ClusterInfo, hostPort: string): ClusterNode {
  const port = Number(hostPort.split(':').pop());
  const node = cluster.nodes.find((n) => n.port === port);
  if (!node) throw new Error(`no cluster node listens on ${hostPort}`);
  return node;
}

export interface StartClusterOptions {
  /** One AMQP port a node; fixed, so the ports can be checked free first. */
  readonly amqpPorts: readonly number[];
  /** Erlang distribution ports, one a node. */
  readonly distPorts: readonly number[];
  /** Who runs it (`fleet`, `bench`): in node names, folder names and errors. */
  readonly label: string;
}

export interface StartedCluster {
  readonly cluster: ClusterInfo;
  /** Seconds from the first boot to three running nodes. */
  readonly seconds: number;
  /** Kills every node (`kill -9`) and removes the folders. */
  teardown(): Promise<void>;
}

/**
 * A three-node RabbitMQ cluster on this machine, nodes n1..n3 with names unique to the run and
 * folders under one temp dir owned by rabbitmq; they share a cookie of their own (not the
 * machine's broker's) and the one epmd. The consistent-hash plugin is enabled. Anything wrong
 * throws, after tearing down what was started.
 */
export async function startRabbitCluster(options: StartClusterOptions): Promise<StartedCluster> {
  const { amqpPorts, distPorts, label } = options;
  for (const port of [...amqpPorts, ...distPorts]) {
    if (await acceptsConnections(port))
      throw new Error(
        `Port ${port} is taken: the ${label} cluster needs AMQP ports ${amqpPorts.join(', ')} and distribution ports ${distPorts.join(', ')} free (another run, or a cluster left behind?).`,
      );
  }
  const root = mkdtempSync(path.join(tmpdir(), `rabbit-cluster-${label}-`));
  const home = path.join(root, 'home');
  mkdirSync(home);
  writeFileSync(path.join(home, '.erlang.cookie'), randomBytes(16).toString('hex'));
  chmodSync(path.join(home, '.erlang.cookie'), 0o400);
  const run_ = `${label === 'fleet' ? '' : `${label}-`}${process.pid}-${randomBytes(3).toString('hex')}`;
  const nodes: ClusterNode[] = amqpPorts.map((port, i) => {
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
      distPort: distPorts[i] as number,
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
    if (running.length !== nodes.length)
      throw new Error(`the cluster runs ${running.length} node(s), not ${nodes.length}: ${status}`);
    return { cluster, seconds: (Date.now() - started) / 1000, teardown };
  } catch (error) {
    await teardown();
    throw error;
  }
}

/** The OS pid of a node's Erlang VM (its pid file), for its CPU time; undefined if not running. */
export function nodeOsPid(node: ClusterNode): number | undefined {
  const pid = osPid(node);
  return pid !== undefined && alive(pid) ? pid : undefined;
}
