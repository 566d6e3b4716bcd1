import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/**
 * The scripts themselves, not the /usr/sbin wrappers: as root those `su` to the rabbitmq user,
 * which swaps HOME (and so the Erlang cookie) and would tie this node to the machine's own.
 */
const BIN = '/usr/lib/rabbitmq/bin';
const START_TIMEOUT_S = 60;

/**
 * A private RabbitMQ node for a test that must stop and start a broker: its own node name,
 * AMQP and distribution ports, data, logs, config and Erlang cookie, so the machine's broker on
 * 5672 (which other tests use) is never touched. Stopping it keeps its data: durable queues and
 * persistent messages are there again after `start()`, as after a real broker restart.
 */
export interface RabbitMqNode {
  readonly nodeName: string;
  readonly port: number;
  /** `amqp://guest:guest@127.0.0.1:<port>` (guest may log in remotely: `loopback_users = none`). */
  readonly url: string;
  /** Halts the Erlang VM (graceful: queues are flushed) and waits until the process is gone. */
  stop(): Promise<void>;
  /** Boots the node again with the same name, ports and data; resolves when it accepts AMQP. */
  start(): Promise<void>;
  /** Stops the node and removes its files. */
  destroy(): Promise<void>;
}

/** Nodes still running when the test process exits are killed with it (no stray brokers). */
const running = new Map<string, string>(); // node name → pid file
process.once('exit', () => {
  for (const pidFile of running.values()) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

export async function startRabbitMqNode(prefix = 'faults'): Promise<RabbitMqNode> {
  if (!existsSync(path.join(BIN, 'rabbitmq-server')))
    throw new Error(`${BIN}/rabbitmq-server is missing: run scripts/ensure-services.sh`);
  const dir = mkdtempSync(path.join(tmpdir(), `rabbitmq-${prefix}-`));
  const nodeName = `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}@localhost`;
  const [port, distPort] = await Promise.all([freePort(), freePort()]);
  const pidFile = path.join(dir, 'node.pid');
  // Our own config file: the machine's /etc/rabbitmq/rabbitmq.conf names port 5672, and its
  // rabbitmq-env.conf names the node rabbit@localhost — either would clash with the shared broker.
  writeFileSync(
    path.join(dir, 'rabbitmq.conf'),
    `listeners.tcp.1 = 127.0.0.1:${port}\nloopback_users = none\n`,
  );
  writeFileSync(path.join(dir, 'enabled_plugins'), '[].\n'); // no management plugin: it would want port 15672
  writeFileSync(path.join(dir, 'rabbitmq-env.conf'), '');
  writeFileSync(path.join(dir, '.erlang.cookie'), randomBytes(16).toString('hex'));
  chmodSync(path.join(dir, '.erlang.cookie'), 0o400); // Erlang refuses a cookie others can read
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir, // the Erlang cookie is read from $HOME: this node's and its rabbitmqctl's only
    LANG: 'C.UTF-8',
    RABBITMQ_NODENAME: nodeName,
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_PID_FILE: pidFile,
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: path.join(dir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_CONF_ENV_FILE: path.join(dir, 'rabbitmq-env.conf'),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    ERL_FLAGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  };
  const ctl = (args: string[], timeoutMs: number) =>
    run(path.join(BIN, 'rabbitmqctl'), ['-n', nodeName, ...args], {
      env,
      cwd: dir,
      timeout: timeoutMs,
    });

  async function start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(path.join(BIN, 'rabbitmq-server'), ['-detached'], {
        env,
        cwd: dir,
        stdio: 'ignore',
      });
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`rabbitmq-server -detached exited with ${code}`)),
      );
    });
    running.set(nodeName, pidFile);
    try {
      // `wait` follows the pid file, then the node's boot: `await_startup` right after -detached fails.
      await ctl(
        ['wait', '--timeout', String(START_TIMEOUT_S), pidFile],
        (START_TIMEOUT_S + 10) * 1000,
      );
    } catch (error) {
      const log = [path.join(dir, 'log', `${nodeName}.log`)]
        .filter(existsSync)
        .map((f) => readFileSync(f, 'utf8').slice(-4000));
      throw new Error(
        `RabbitMQ node ${nodeName} did not start: ${(error as Error).message}\n${log.join('\n')}`,
      );
    }
  }

  async function stop(): Promise<void> {
    if (!existsSync(pidFile)) return;
    try {
      await ctl(['stop', pidFile], 60_000); // returns once the OS process has exited
    } catch (error) {
      // A node that will not stop politely is killed: a test must never leave a broker behind.
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
      } catch {
        // already gone
      }
      if (!String((error as Error).message).includes('nodedown')) throw error;
    }
    rmSync(pidFile, { force: true });
    running.delete(nodeName);
  }

  await start();
  return {
    nodeName,
    port,
    url: `amqp://guest:guest@127.0.0.1:${port}`,
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
