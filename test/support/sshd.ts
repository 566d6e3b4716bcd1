import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SSHD = '/usr/sbin/sshd';
const READY_TIMEOUT_MS = 10_000;

/**
 * A private OpenSSH server for one test file: its own port on 127.0.0.1, its own ed25519 host
 * and client keys, public-key auth only, SFTP only. `scripts/ensure-services.sh` installs sshd.
 */
export interface TestSshd {
  readonly host: string;
  readonly port: number;
  /** Whoever runs the tests — root here, which sshd allows with keys only (`prohibit-password`). */
  readonly username: string;
  readonly privateKeyPath: string;
  /** The host key's fingerprint as `ssh-keygen -l` prints it (`SHA256:…`). */
  readonly hostKeyFingerprint: string;
  /** A known_hosts file naming this server (`[127.0.0.1]:port ssh-ed25519 …`). */
  readonly knownHostsPath: string;
  /**
   * The SFTP user's login (and working) directory (`ForceCommand internal-sftp -d`): relative
   * remote paths resolve here. Not a chroot — absolute paths are the machine's own.
   */
  readonly dataDir: string;
  /** Terminates the server and every session it forked, then removes its files. */
  stop(): Promise<void>;
  /** SIGKILL to the server and every session it forked: clients see their connections die. */
  kill(): Promise<void>;
  /** Starts the server again after `kill()`: same port, same keys, same data. */
  restart(): Promise<void>;
  /** SIGSTOP to the server and its sessions: connections stay open but nothing answers. */
  freeze(): void;
  /** SIGCONT after `freeze()`. */
  thaw(): void;
}

export async function startSshd(): Promise<TestSshd> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sshd-'));
  const dataDir = path.join(dir, 'data');
  mkdirSync(dataDir);
  const hostKey = path.join(dir, 'host_ed25519');
  const clientKey = path.join(dir, 'client_ed25519');
  await Promise.all([
    run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'test-sshd-host', '-f', hostKey]),
    run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'test-sshd-client', '-f', clientKey]),
  ]);
  writeFileSync(path.join(dir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
  const { stdout } = await run('ssh-keygen', ['-l', '-f', `${hostKey}.pub`]);
  const hostKeyFingerprint = stdout.split(' ')[1] ?? '';
  if (!hostKeyFingerprint.startsWith('SHA256:'))
    throw new Error(`Unexpected ssh-keygen -l output: ${stdout}`);
  const [keyType, keyBase64] = readFileSync(`${hostKey}.pub`, 'utf8').split(' ');
  const configPath = path.join(dir, 'sshd_config');
  const knownHostsPath = path.join(dir, 'known_hosts');

  const writeConfig = (port: number) => {
    writeFileSync(
      configPath,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${hostKey}`,
        'PidFile none',
        'UsePAM no',
        'UseDNS no',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
        'StrictModes no', // the keys live under a world-writable temp dir
        'PermitRootLogin prohibit-password',
        'AllowTcpForwarding no',
        'X11Forwarding no',
        'PrintMotd no',
        'Subsystem sftp internal-sftp',
        `ForceCommand internal-sftp -d ${dataDir}`,
        '',
      ].join('\n'),
    );
    writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${keyType} ${keyBase64}\n`);
  };

  let child: ChildProcess | undefined;
  let port = 0;
  // sshd cannot pick a free port itself: take one the kernel hands out and retry on a collision.
  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    writeConfig(port);
    try {
      child = await launch(configPath);
      break;
    } catch (error) {
      if (!(error instanceof PortInUse) || attempt >= 5) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }

  const signalAll = (signal: NodeJS.Signals) => {
    const pid = child?.pid;
    if (pid === undefined || child?.exitCode !== null || child.signalCode !== null) return;
    // Sessions are forked children in their own sessions (setsid): signal the whole tree.
    for (const each of [pid, ...descendants(pid)]) {
      try {
        process.kill(each, signal);
      } catch {
        // already gone
      }
    }
  };

  async function terminate(signal: NodeJS.Signals): Promise<void> {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    if (signal !== 'SIGKILL') signalAll('SIGCONT');
    process.kill(current.pid!, 'SIGSTOP'); // no new sessions while the tree is collected
    signalAll(signal);
    signalAll('SIGCONT');
    const forced = setTimeout(() => signalAll('SIGKILL'), 2_000);
    await exited;
    clearTimeout(forced);
  }

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    username: userInfo().username,
    privateKeyPath: clientKey,
    hostKeyFingerprint,
    knownHostsPath,
    dataDir,
    async stop() {
      await terminate('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    async kill() {
      await terminate('SIGKILL');
    },
    async restart() {
      if (child && child.exitCode === null && child.signalCode === null)
        throw new Error('sshd is still running: kill() it first');
      // The same port: the old listening socket is closed, sshd binds with SO_REUSEADDR.
      for (let attempt = 1; ; attempt += 1) {
        try {
          child = await launch(configPath);
          return;
        } catch (error) {
          if (!(error instanceof PortInUse) || attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    },
    freeze() {
      signalAll('SIGSTOP');
    },
    thaw() {
      signalAll('SIGCONT');
    },
  };
}

class PortInUse extends Error {}

/** Starts `sshd -D -e` and resolves once it listens; rejects with its stderr otherwise. */
function launch(configPath: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(SSHD, ['-D', '-e', '-f', configPath], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const timer = setTimeout(
      () =>
        fail(new Error(`sshd did not come up within ${READY_TIMEOUT_MS} ms. stderr:\n${stderr}`)),
      READY_TIMEOUT_MS,
    );
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      // Keep the start of the log (why it failed) and drain the rest, so sshd never blocks on the pipe.
      if (stderr.length < 64 * 1024) stderr += chunk;
      if (!settled && /Server listening on 127\.0\.0\.1 port \d+\./.test(stderr)) {
        settled = true;
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('error', (error) =>
      fail(new Error(`Could not run ${SSHD} (run scripts/ensure-services.sh): ${error.message}`)),
    );
    child.once('exit', (code, signal) => {
      const message = `sshd exited (${signal ?? `code ${code}`}) before listening. stderr:\n${stderr}`;
      fail(/Address already in use/.test(stderr) ? new PortInUse(message) : new Error(message));
    });
  });
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

/** Every process below `pid`, read from /proc (Linux). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = parents.get(ppid) ?? [];
    list.push(Number(entry));
    parents.set(ppid, list);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const kid of parents.get(queue.shift()!) ?? []) {
      found.push(kid);
      queue.push(kid);
    }
  }
  return found;
}
