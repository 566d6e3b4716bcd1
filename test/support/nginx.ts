import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect, vi } from 'vitest';
import { acceptsConnections } from './tcp-probe.js';

/** Debian's nginx (scripts/ensure-services.sh installs it; the test starts its own). */
const NGINX = '/usr/sbin/nginx';

export interface TestNginx {
  /** `http://127.0.0.1:<port>`: what a browser would open. */
  readonly origin: string;
  stop(): Promise<void>;
}

/**
 * A private nginx in the foreground with its own configuration, prefix folder and port, and the
 * `server` block given (its `listen` is filled in): a real reverse proxy in front of the service.
 * Any nginx of the machine is left alone.
 */
export async function startNginx(
  dir: string,
  server: (listen: string) => string,
): Promise<TestNginx> {
  const port = await freePort();
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const config = path.join(dir, 'nginx.conf');
  writeFileSync(
    config,
    `worker_processes 1;
error_log ${dir}/logs/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    ${server(`listen 127.0.0.1:${port};`)}
  }
}
`,
  );
  const child: ChildProcess = spawn(
    NGINX,
    ['-c', config, '-p', dir, '-g', `daemon off; pid ${dir}/nginx.pid;`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  let exited = false;
  child.once('exit', () => void (exited = true));
  child.once('error', (error) => {
    stderr += `${error.message} (run scripts/ensure-services.sh)`;
    exited = true;
  });
  await vi.waitFor(
    async () => {
      if (exited) throw new Error(`nginx did not start:\n${stderr}`);
      expect(await acceptsConnections(port)).toBe(true);
    },
    { timeout: 15_000, interval: 50 },
  );
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGQUIT'); // nginx's graceful stop
      }),
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
