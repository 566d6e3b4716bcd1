/**
 * `serve` at start-up: it binds HTTP before any drop is touched and exits non-zero when it
 * cannot; it refuses the public demo credential with a real broker; it says in one line what it
 * runs, and warns when the pipelines folder is missing, or when the listeners' bounds on
 * connections do not fit under the descriptor limit.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SPOOL_OWNER } from '../../src/drops/spool.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { openFilesLimit, warnAboutDescriptorLimit } from '../../src/start-up.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { startCli, stopCli } from '../support/cli-worker.js';
import { LogCapture } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('start-up-');
const running: RunningService[] = [];
afterAll(async () => {
  for (const service of running) await service.stop();
});

/** A pipelines folder with one local drop that holds one valid file. */
function dropWithAFile(name: string): { pipelines: string; drop: string } {
  const pipelines = path.join(temp.dir, `${name}-pipelines`);
  const drop = path.join(temp.dir, `${name}-drop`);
  mkdirSync(pipelines);
  mkdirSync(drop);
  copyFileSync(
    new URL('../../fixtures/demo/sales-orders.json', import.meta.url),
    path.join(drop, 'orders.json'),
  );
  temp.write(
    `${name}-pipelines/${name}.yaml`,
    stringify({
      name,
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v2-json',
      source: { type: 'local', path: drop },
      readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
    }),
  );
  return { pipelines, drop };
}

describe('serve on a port that is taken', () => {
  it('exits 1 naming the address, and has not touched a single dropped file', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const { pipelines, drop } = dropWithAFile('taken');
      const service = startCli(['serve'], {
        INGEST_CONFIG: temp.write(
          'taken.yaml',
          stringify({ dataDirectory: `${temp.dir}/taken-data`, pipelinesDirectory: pipelines }),
        ),
        HOST: '127.0.0.1',
        PORT: String(port),
        ADMIN_PORT: '0',
      });
      let exit: string | undefined;
      void service.exited.then((how) => (exit = how));
      try {
        await expect
          .poll(() => exit, { timeout: 30_000, message: service.stderr() })
          .toBe('code 1');
      } finally {
        if (exit === undefined) await stopCli(service, 'SIGKILL');
      }
      expect(service.stderr()).toContain(
        `cannot listen on 127.0.0.1:${port}: the address is already in use`,
      );
      expect(readdirSync(drop)).toEqual(['orders.json']);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('the demo tenant', () => {
  it('is refused, with what to do, when a broker URL is set', async () => {
    const { code, stderr } = await runCli(['serve'], {
      env: {
        INGEST_CONFIG: temp.write(
          'demo-broker.yaml',
          stringify({ dataDirectory: `${temp.dir}/demo-data` }),
        ),
        AMQP_URL,
        HOST: '127.0.0.1',
        PORT: '0',
        ADMIN_PORT: '0',
      },
      timeoutMs: 30_000,
    });
    expect(code).toBe(1);
    expect(stderr).toContain('The public demo credential (DEMO:demo-api-key) must not publish');
    expect(stderr).toContain('unset AMQP_URL');
  });
});

describe('the start-up line', () => {
  it('says environment, config files, publisher, pipelines and their folder, and the URL, in one line', async () => {
    const { pipelines } = dropWithAFile('summary');
    const config = temp.write(
      'summary.yaml',
      stringify({ dataDirectory: `${temp.dir}/summary-data`, pipelinesDirectory: pipelines }),
    );
    const logs = new LogCapture();
    const service = await startService({
      env: { INGEST_CONFIG: config, PORT: '0', ADMIN_PORT: '0' },
      log: createLogger({ destination: logs }),
    });
    running.push(service);
    const started = logs.lines.filter((l) => String(l.msg).startsWith('listening on '));
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      url: service.url,
      adminUrl: service.adminUrl,
      environment: 'development',
      configFiles: [
        expect.stringMatching(/config\/default\.yaml$/),
        expect.stringMatching(/config\/development\.yaml$/),
        config,
      ],
      publisher: 'embedded',
      pipelinesDirectory: pipelines,
      pipelines: ['summary'],
    });
    // Development listens on loopback unless HOST says otherwise.
    expect(service.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("removes the scratch files a killed process of this host left in the spool, and no one else's", async () => {
    const data = `${temp.dir}/sweep-data`;
    const spool = path.join(data, 'spool');
    mkdirSync(spool, { recursive: true });
    const dead = `${hostname()}~4194304~a-large-body.messages`; // above any pid_max: no such process
    // Our pid, another start time: the process before a container restart, which had the same pid.
    const reusedPid = `${hostname()}~${process.pid}.1~before-a-restart.messages`;
    const live = `${SPOOL_OWNER}in-use.messages`;
    const liveUntimed = `${hostname()}~${process.pid}~an-older-version.messages`;
    const elsewhere = 'another-host~1~theirs.messages';
    for (const name of [dead, reusedPid, live, liveUntimed, elsewhere])
      writeFileSync(path.join(spool, name), 'records');
    const config = temp.write(
      'sweep.yaml',
      stringify({ dataDirectory: data, pipelinesDirectory: `${temp.dir}/none` }),
    );
    const service = await startService({
      env: { INGEST_CONFIG: config, PORT: '0', ADMIN_PORT: '0' },
      log: createLogger({ level: 'silent' }),
    });
    running.push(service);
    expect(readdirSync(spool).sort()).toEqual([elsewhere, live, liveUntimed].sort());
    expect(live).toMatch(/~\d+\.\d+~in-use/); // Linux: the start time is in the name
  });

  it('serves /metrics and /readyz on the admin listener only; /healthz on both', async () => {
    const service = running[0]!;
    expect(service.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(service.adminUrl).not.toBe(service.url);
    for (const path of ['/metrics', '/readyz'])
      expect((await fetch(`${service.url}${path}`)).status, path).toBe(404);
    const metrics = await fetch(`${service.adminUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('ingest_');
    expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200);
    for (const base of [service.url, service.adminUrl])
      expect((await fetch(`${base}/healthz`)).status, base).toBe(200);
    // The partners' API document no longer lists them.
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths)).not.toContain('/metrics');
  });

  it('is preceded by a warning naming a pipelines folder that does not exist; a relative one is relative to its config file', async () => {
    const folder = path.join(temp.dir, 'relative');
    mkdirSync(folder);
    const config = temp.write(
      'relative/config.yaml',
      stringify({ dataDirectory: `${temp.dir}/relative-data`, pipelinesDirectory: 'pipelines' }),
    );
    const logs = new LogCapture();
    const service = await startService({
      env: { INGEST_CONFIG: config, PORT: '0', ADMIN_PORT: '0', HOST: '127.0.0.1' },
      log: createLogger({ destination: logs }),
    });
    running.push(service);
    const expected = path.join(folder, 'pipelines');
    expect(existsSync(expected)).toBe(false);
    const warning = logs.lines.find((l) => l.level === 'warn');
    expect(warning).toMatchObject({
      pipelinesDirectory: expected,
      msg: `pipelinesDirectory ${expected} does not exist: no drop pipelines run`,
    });
    expect(logs.lines.find((l) => String(l.msg).startsWith('listening on '))).toMatchObject({
      pipelines: [],
      pipelinesDirectory: expected,
    });
  });
});

describe('the descriptor limit', () => {
  it("warns when the listeners' maxConnections leave too few of the process's descriptors for the rest", () => {
    const logs = new LogCapture();
    const log = createLogger({ destination: logs });
    const bounds = { http: { maxConnections: 10_000 }, admin: { maxConnections: 100 } };
    warnAboutDescriptorLimit(bounds, log, 20_000);
    expect(logs.lines).toEqual([]);
    warnAboutDescriptorLimit(bounds, log, 1024);
    expect(logs.lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        openFilesLimit: 1024,
        httpMaxConnections: 10_000,
        msg: expect.stringContaining('ulimit -n'),
      }),
    ]);
    // Read from /proc/self/limits on Linux.
    expect(openFilesLimit()).toBeGreaterThan(0);
  });
});
