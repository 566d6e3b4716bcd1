import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { askRedis } from '../support/redis-ask.js';
import { acceptsConnections } from '../support/tcp-probe.js';

/**
 * A Redis Sentinel set of its own on loopback, started once per run of the `fleet` project: a
 * master (6390), a replica (6391) and three sentinels (26390-26392) monitoring it as `ingest`,
 * quick to fail over (`down-after-milliseconds 1000`, `failover-timeout 5000`). Debian's
 * `redis-server` runs all five (a sentinel is `redis-server <file> --sentinel`, what the
 * `redis-sentinel` command is). Missing, it is installed with apt; that failing, the run fails:
 * never a skipped test. The machine's own Redis (6379) is left alone.
 */
export const SENTINEL_SET = {
  masterName: 'ingest',
  master: 6390,
  replica: 6391,
  sentinels: [26390, 26391, 26392],
} as const;

declare module 'vitest' {
  export interface ProvidedContext {
    redisSentinel: { masterName: string; sentinels: string[]; folder: string };
  }
}

const children: ChildProcess[] = [];

export default async function startSentinelSet(project: TestProject): Promise<() => Promise<void>> {
  ensureRedisServer();
  const { masterName, master, replica, sentinels } = SENTINEL_SET;
  for (const port of [master, replica, ...sentinels])
    if (await acceptsConnections(port))
      throw new Error(
        `port ${port} is taken: the Redis Sentinel set of test/setup/redis-sentinel.ts needs 6390, 6391 and 26390-26392 (a run left over? stop the redis-server on it)`,
      );
  const folder = mkdtempSync(path.join(os.tmpdir(), 'ingest-sentinel-'));
  const server = (port: number, extra: string[] = []) => {
    const file = path.join(folder, `redis-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'save ""',
        'appendonly no',
        `dir ${folder}`,
        `pidfile ${path.join(folder, `redis-${port}.pid`)}`,
        'daemonize no',
        ...extra,
        '',
      ].join('\n'),
    );
    return file;
  };
  start(server(master), [], folder, master);
  start(server(replica, [`replicaof 127.0.0.1 ${master}`]), [], folder, replica);
  for (const port of sentinels) {
    // Sentinels rewrite their file (what they learn): each gets its own.
    const file = server(port, [
      `sentinel monitor ${masterName} 127.0.0.1 ${master} 2`,
      `sentinel down-after-milliseconds ${masterName} 1000`,
      `sentinel failover-timeout ${masterName} 5000`,
      `sentinel parallel-syncs ${masterName} 1`,
    ]);
    start(file, ['--sentinel'], folder, port);
  }
  const stop = async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    // A server a test started again (the old master back) is known by its pid file only.
    for (const port of [master, replica])
      try {
        process.kill(serverPid(folder, port), 'SIGKILL');
      } catch {
        // gone already
      }
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await settled();
  } catch (error) {
    await stop();
    throw error;
  }
  project.provide('redisSentinel', {
    masterName,
    sentinels: sentinels.map((port) => `127.0.0.1:${port}`),
    folder,
  });
  return stop;
}

/** Installs Debian's redis-server when it is missing; fails loudly when that cannot be done. */
function ensureRedisServer(): void {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return;
  } catch {
    // not installed: below
  }
  try {
    execFileSync('apt-get', ['update'], { stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', 'redis-server'], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (error) {
    throw new Error(
      `redis-server is missing and could not be installed (apt-get install -y redis-server): ${(error as Error).message}`,
    );
  }
}

function start(file: string, args: string[], folder: string, port: number): void {
  const child = spawn('redis-server', [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = path.join(folder, `redis-${port}.log`);
  const keep = (chunk: Buffer) => writeFileSync(log, chunk, { flag: 'a' });
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('error', () => undefined);
  children.push(child);
}

/** Waits until the replica is in sync and each sentinel knows the replica and the other two. */
async function settled(): Promise<void> {
  const { masterName, replica, sentinels } = SENTINEL_SET;
  const deadline = Date.now() + 30_000;
  let last = 'nothing answered';
  while (Date.now() < deadline) {
    try {
      const sync = await askRedis(replica, ['info', 'replication']);
      if (!String(sync).includes('master_link_status:up')) throw new Error('replica not in sync');
      for (const port of sentinels) {
        const fields = (await askRedis(port, ['sentinel', 'master', masterName])) as string[];
        const value = (name: string) => fields[fields.indexOf(name) + 1];
        if (value('num-slaves') !== '1' || value('num-other-sentinels') !== '2')
          throw new Error(
            `sentinel ${port}: ${value('num-slaves')} replica(s), ${value('num-other-sentinels')} other sentinel(s)`,
          );
      }
      return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the Redis Sentinel set did not settle within 30 s: ${last}`);
}

/** The OS pid of the Redis server on `port` (its pid file), to kill it hard. */
export function serverPid(folder: string, port: number): number {
  return Number(readFileSync(path.join(folder, `redis-${port}.pid`), 'utf8').trim());
}
