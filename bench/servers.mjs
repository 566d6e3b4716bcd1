// Starting, probing and stopping the two servers. Every child is tracked so run.mjs can kill
// them on any exit path (normal end, error, Ctrl-C).
import { execFile, fork, spawn } from 'node:child_process';
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = path.join(ROOT, 'dist/cli.js');

/**
 * Node's flags in package.json's `start` (`node <flags> dist/cli.js serve`, what the release folder
 * and the image run): every `serve` the bench starts gets them, and so does the baseline, so both
 * sides run on the same runtime settings.
 */
export const RUNTIME_FLAGS = (() => {
  const start = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const words = start.split(' ');
  return words.slice(words.indexOf('node') + 1, words.indexOf('dist/cli.js'));
})();
const children = new Set();
const temporary = [];

/** Sends SIGTERM to every live child, SIGKILL to those still up after `graceMs`. */
export async function stopAll(graceMs = 3000) {
  await Promise.all([...children].map((child) => stop(child, graceMs)));
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Last resort on process exit: synchronous, no waiting. */
export function killAllNow() {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
}

function stop(child, graceMs) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function track(child, name) {
  children.add(child);
  let tail = '';
  const keep = (chunk) => (tail = (tail + chunk).slice(-2000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('exit', () => children.delete(child));
  child.died = new Promise((resolve) =>
    child.once('exit', (code, signal) =>
      resolve(
        `${name} exited (${signal ?? `code ${code}`}): ${tail.trim().split('\n').slice(-3).join(' | ')}`,
      ),
    ),
  );
  return child;
}

/** Peak resident set (VmHWM) in MiB, Linux only. */
export function peakRssMiB(pid) {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

/** User and system CPU time in ms from a /proc `stat` file (utime, stime: 100 Hz ticks). */
function statCpuMs(file) {
  const stat = readFileSync(file, 'utf8');
  // After the command name, which may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat; null if unreadable. */
export function cpuMs(pid) {
  try {
    const { user, system } = statCpuMs(`/proc/${pid}/stat`);
    return user + system;
  } catch {
    return null;
  }
}

/**
 * CPU time of a process by thread, in ms: the main thread's (the thread whose id is the pid: the
 * event loop, where the JS runs) user and system time, and all other threads' together (V8's GC
 * helpers, the libuv pool); null if unreadable. Threads that ended in between are not counted.
 */
export function threadCpuMs(pid) {
  try {
    const out = { mainUser: 0, mainSystem: 0, others: 0 };
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const { user, system } = statCpuMs(`/proc/${pid}/task/${tid}/stat`);
      if (tid === String(pid)) [out.mainUser, out.mainSystem] = [user, system];
      else out.others += user + system;
    }
    return out;
  } catch {
    return null;
  }
}

/** Busy CPU time of the whole machine in ms (all cores), from /proc/stat; null if unreadable. */
export function machineBusyMs() {
  try {
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = readFileSync(
      '/proc/stat',
      'utf8',
    )
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + steal) * 10;
  } catch {
    return null;
  }
}

/**
 * The local RabbitMQ (beam.smp) process listening on `port`, to account its CPU too; undefined if
 * not on this machine. By the listening socket, not by name alone: a test run's or the cluster
 * bench's nodes are beam.smp processes too.
 */
export function brokerPid(port = 5672) {
  const beams = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'beam.smp';
      } catch {
        return false;
      }
    });
  const inodes = listeningInodes(port);
  for (const pid of beams) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return Number(pid);
      }
    } catch {}
  }
  return beams.length === 1 ? Number(beams[0]) : undefined;
}

/** Inodes of the TCP sockets listening on `port` (/proc/net/tcp and tcp6, state 0A). */
function listeningInodes(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f[1]?.endsWith(`:${hex}`) && f[3] === '0A') inodes.add(f[9]);
      }
    } catch {}
  }
  return inodes;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** `warehouse-ingest hash-key -`: the scrypt hash a tenant's `apiKeyHash` takes. */
export async function hashKey(key) {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [CLI, 'hash-key', '-'], (error, stdout) =>
      error ? reject(error) : resolve(stdout.trim()),
    );
    child.stdin.end(key);
  });
}

/** Resolves when `probe()` is true; rejects if the child dies or `timeoutMs` passes first. */
async function waitFor(child, probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  const died = child.died.then((why) => Promise.reject(new Error(why)));
  died.catch(() => {});
  while (Date.now() < deadline) {
    if (await Promise.race([probe(), died])) return;
    await Promise.race([new Promise((r) => setTimeout(r, 100)), died]);
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms`);
}

/**
 * `node dist/cli.js serve` in production mode with a one-tenant bench config. `environment:
 * 'sandbox'` runs the same config without a broker (validates, answers, publishes nothing);
 * `shards` spreads the bench queue over N queues (broker.queues[].shards); `queueArguments` e.g.
 * `{ 'x-queue-type': 'quorum' }`; `messageFormat`: broker.messageFormat (the default when omitted);
 * `env`: more environment variables (e.g. the history's, `INGEST_HISTORY__ENABLED`).
 */
export async function startService({
  amqpUrl,
  exchange,
  queue,
  businessId,
  apiKey,
  nodeArgs = [],
  environment = 'production',
  shards,
  queueArguments,
  messageFormat,
  env: extraEnv = {},
  name = 'service',
}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-bench-'));
  temporary.push(dir);
  const config = path.join(dir, 'bench.yaml');
  writeFileSync(
    config,
    [
      'broker:',
      `  exchange: ${JSON.stringify(exchange)}`,
      '  queues:',
      `    - name: ${JSON.stringify(queue)}`,
      '      bindingKeys: ["#"]',
      ...(shards ? [`      shards: ${shards}`] : []),
      ...(queueArguments ? [`      arguments: ${JSON.stringify(queueArguments)}`] : []),
      ...(messageFormat ? [`  messageFormat: ${JSON.stringify(messageFormat)}`] : []),
      // Its own folder: the history (on by default, embedded) starts empty in every run, never
      // in the checkout's data/ where runs would pile up.
      `dataDirectory: ${JSON.stringify(path.join(dir, 'data'))}`,
      'tenants:',
      `  - businessId: ${JSON.stringify(businessId)}`,
      `    apiKeyHash: ${JSON.stringify(await hashKey(apiKey))}`,
      '    name: bench',
      // The bench measures throughput: one tenant far above the default abuse limits.
      'http:',
      '  abuse:',
      '    rateLimit: { requests: 100000000, windowSeconds: 1 }',
      '    maxInFlightBatches: 100000',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const port = await freePort();
  const adminPort = await freePort();
  const env = {
    ...process.env,
    INGEST_ENV: environment,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    // The default level: a line per batch with its correlation id stays on while measured.
    LOG_LEVEL: 'info',
    INGEST_CONFIG: config,
    ...extraEnv,
  };
  if (environment === 'sandbox') delete env.AMQP_URL;
  else env.AMQP_URL = amqpUrl;
  const child = track(
    spawn(process.execPath, [...RUNTIME_FLAGS, ...nodeArgs, CLI, 'serve'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    name,
  );
  const url = `http://127.0.0.1:${port}`;
  // /readyz is on the admin listener (admin.port).
  const ready = () =>
    fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
  await waitFor(child, ready, 30_000, `${name} /readyz`);
  return { name, url, child };
}

/**
 * bench/baseline-server.mjs, forked; it reports its port over IPC once listening. `publish:
 * false` = PUBLISH=0: validate, make ids, answer 202, no broker; `guarantees` = GUARANTEES=1 (with
 * PUBLISH=0): the same with the service's per-request guarantees (see baseline-server.mjs); `fields`
 * = FIELDS: the message properties and headers it sends (`all`, `none` or a comma list).
 */
export async function startBaseline({
  amqpUrl,
  exchange,
  routingKey,
  businessId,
  authorization,
  path: endpoint,
  nodeArgs = [],
  publish = true,
  guarantees = false,
  fields = 'all',
  name = 'baseline',
}) {
  const env = {
    ...process.env,
    AMQP_URL: amqpUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    BENCH_EXCHANGE: exchange,
    BENCH_ROUTING_KEY: routingKey,
    BENCH_BUSINESS_ID: businessId,
    BENCH_AUTHORIZATION: authorization,
    BENCH_PATH: endpoint,
    PUBLISH: publish ? '1' : '0',
    GUARANTEES: guarantees ? '1' : '0',
    FIELDS: fields,
  };
  const child = track(
    fork(path.join(ROOT, 'bench/baseline-server.mjs'), {
      cwd: ROOT,
      env,
      execArgv: [...RUNTIME_FLAGS, ...nodeArgs],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    }),
    name,
  );
  let port;
  child.once('message', (message) => (port = message.port));
  await waitFor(child, async () => port !== undefined, 10_000, name);
  return { name, url: `http://127.0.0.1:${port}`, child };
}

export { stop as stopServer };
