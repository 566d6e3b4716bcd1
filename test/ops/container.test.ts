/**
 * The Dockerfile and compose.yaml against the configuration (no container engine runs here, so
 * what the image would do is checked piece by piece): the image's environment leaves the listen
 * address to the configuration layers, every volume is mounted where the image made a folder the
 * `node` user owns, and the HEALTHCHECK (`warehouse-ingest healthcheck`) answers for a running
 * service with and without `http.tls`.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { healthzUrl } from '../../src/cli/healthcheck.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { demoTenantYaml } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';
import { makeCertificate } from '../support/tls-certificate.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Dockerfile's stages, each a list of instructions (continuation lines joined, comments dropped). */
function dockerfileStages(text: string): Instruction[][] {
  const lines = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '');
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const [, keyword, args] = /^\s*(\S+)\s+(.*)$/.exec(line)!;
    if (keyword!.toUpperCase() === 'FROM') stages.push([]);
    stages.at(-1)?.push({ keyword: keyword!.toUpperCase(), args: args!.trim() });
  }
  return stages;
}

const temp = tempFolder('container-');
const stages = dockerfileStages(read('Dockerfile'));
const image = stages.at(-1)!;
const compose = parse(read('compose.yaml')) as {
  services: Record<string, { image?: string; build?: unknown; volumes?: string[] }>;
  volumes?: Record<string, unknown>;
};

/** The final stage's ENV, as the container's process sees it (`ENV A=1 B=2` and `ENV A 1`). */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of image.filter((i) => i.keyword === 'ENV')) {
    if (!args.includes('=')) {
      const [name, ...value] = args.split(/\s+/);
      env[name!] = value.join(' ');
      continue;
    }
    for (const [, name, value] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g))
      env[name!] = value!.replace(/^"|"$/g, '');
  }
  return env;
}

/** The paths a shell command line makes with `mkdir` and gives to `node` with `chown`. */
function madeAndOwned(commands: string[]): { made: Set<string>; owned: Set<string> } {
  const made = new Set<string>();
  const owned = new Set<string>();
  for (const command of commands.flatMap((c) => c.split(/&&|;/))) {
    const [tool, ...words] = command.trim().split(/\s+/);
    const operands = words.filter((w) => !w.startsWith('-'));
    if (tool === 'mkdir') for (const p of operands) made.add(path.posix.normalize(p));
    if (tool === 'chown' && /^node(:node)?$/.test(operands[0] ?? ''))
      for (const p of operands.slice(1)) owned.add(path.posix.normalize(p));
  }
  return { made, owned };
}

describe('the Dockerfile and compose.yaml', () => {
  it('build and run on Node 24 (bookworm-slim)', () => {
    for (const stage of stages) expect(stage[0]!.args).toMatch(/^node:24-bookworm-slim\b/);
    for (const [name, service] of Object.entries(compose.services))
      if (service.image?.startsWith('node:')) expect(service.image, name).toMatch(/^node:24-/);
  });

  it("bake no listen address: the image's environment leaves http.host and http.port to the configuration layers", () => {
    const env = imageEnv();
    expect(env.INGEST_ENV).toBe('production');
    for (const name of ['PORT', 'HOST', 'INGEST_HTTP__PORT', 'INGEST_HTTP__HOST'])
      expect(env[name], `ENV ${name} in the Dockerfile`).toBeUndefined();
  });

  it("the image's environment with a config file's http.port, with INGEST_HTTP__PORT, and alone", () => {
    {
      const base = { ...imageEnv(), AMQP_URL };
      // Alone: production's listen address (config/production.yaml), the EXPOSEd port.
      const alone = loadConfig({ env: base });
      expect([alone.http.host, alone.http.port]).toEqual(['0.0.0.0', 3000]);
      const exposed = image.find((i) => i.keyword === 'EXPOSE')?.args.split(/\s+/);
      expect(exposed).toContain(String(alone.http.port));
      // A config file's http.port is used, not silently overridden by the image.
      const file = temp.write('config.yaml', stringify({ http: { port: 8443 } }));
      expect(loadConfig({ env: { ...base, INGEST_CONFIG: file } }).http.port).toBe(8443);
      // The documented variable starts the service instead of "both set".
      const fromVariable = loadConfig({
        env: { ...base, INGEST_CONFIG: file, INGEST_HTTP__PORT: '8081' },
      });
      expect(fromVariable.http.port).toBe(8081);
    }
  });

  it('mount every volume of the service at a folder the image made and gave to the node user', () => {
    const run = image.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    const { made, owned } = madeAndOwned(run);
    const user = image.findLastIndex((i) => i.keyword === 'USER');
    expect(image[user]?.args).toBe('node');
    // The folders are made before the image switches to node (root makes them, then hands them over).
    const lastRun = image.findLastIndex((i) => i.keyword === 'RUN');
    expect(lastRun).toBeLessThan(user);

    const declared = image
      .filter((i) => i.keyword === 'VOLUME')
      .flatMap((i) => JSON.parse(i.args) as string[]);
    const ingest = compose.services.ingest!;
    expect(ingest.build, 'the ingest service is built from the Dockerfile').toBeDefined();
    const namedVolumes = Object.keys(compose.volumes ?? {});
    // Named volumes only: a bind mount (./deploy) is the host's folder, read-only here.
    const mounted = (ingest.volumes ?? [])
      .map((v) => v.split(':'))
      .filter(([source]) => namedVolumes.includes(source!))
      .map(([, target]) => target!);
    expect(mounted).toEqual(expect.arrayContaining(['/app/data', '/drops']));
    for (const target of new Set([...declared, ...mounted])) {
      // A new named volume takes the ownership of the folder it is mounted on: root, if the image has none.
      expect([...made], `${target} is made in the image`).toContain(target);
      expect([...owned], `${target} is owned by node`).toContain(target);
    }
  });

  it('check health with `warehouse-ingest healthcheck` (the same configuration as serve)', () => {
    const healthcheck = image.find((i) => i.keyword === 'HEALTHCHECK')?.args;
    const command = /\bCMD (\[.*\])$/.exec(healthcheck ?? '')?.[1];
    expect(command, 'HEALTHCHECK … CMD [exec form]').toBeDefined();
    expect(JSON.parse(command!) as string[]).toEqual(['node', 'dist/cli.js', 'healthcheck']);
    // A Node start plus the configuration plus the command's own 2 s wait: 3 s failed on a busy host.
    const timeout = /--timeout=(\d+)s\b/.exec(healthcheck!)?.[1];
    expect(Number(timeout)).toBeGreaterThanOrEqual(10);
  });
});

/** A port nobody listens on now (the admin listener needs a fixed one: a probe must know where to ask). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

describe('warehouse-ingest healthcheck against a running service', () => {
  let topology: TestTopology;
  const cert = path.join(temp.dir, 'cert.pem');
  const key = path.join(temp.dir, 'key.pem');

  beforeAll(async () => {
    makeCertificate(cert, key);
    topology = await declareTestTopology({ bindingKeys: ['#'] });
  });
  afterAll(async () => {
    await topology?.cleanup();
  });

  async function serviceEnv(name: string, http: Record<string, unknown>, adminHost: string) {
    const config = `${await demoTenantYaml()}${stringify({
      dataDirectory: path.join(temp.dir, name, 'data'),
      pipelinesDirectory: path.join(temp.dir, 'no-pipelines'),
      broker: {
        exchange: topology.exchange,
        queues: [{ name: topology.queue, bindingKeys: ['#'] }],
      },
      http,
      admin: { host: adminHost, port: await freePort() },
    })}`;
    // What the container has: the image's environment, the mounted configuration, the broker.
    return {
      ...imageEnv(),
      INGEST_ENV: 'development',
      INGEST_CONFIG: temp.write(`${name}.yaml`, config),
      INGEST_HTTP__PORT: '0',
      AMQP_URL,
    };
  }

  it('asks a wildcard admin address on loopback, any other as configured', () => {
    expect(healthzUrl({ host: '0.0.0.0', port: 9464 })).toBe('http://127.0.0.1:9464/healthz');
    expect(healthzUrl({ host: '::', port: 9464 })).toBe('http://[::1]:9464/healthz');
    expect(healthzUrl({ host: '10.0.0.7', port: 9000 })).toBe('http://10.0.0.7:9000/healthz');
    expect(healthzUrl({ host: 'fd00::7', port: 9000 })).toBe('http://[fd00::7]:9000/healthz');
  });

  it("exits 1 on an answer other than 200, and reaches a port fetch() would refuse (6666: WHATWG's bad ports)", async () => {
    let status = 503;
    const server = http.createServer((request, response) => {
      response.writeHead(request.url === '/healthz' ? status : 404).end();
    });
    // A fixed port on purpose: it is the one fetch() refuses. In use, the test fails loudly here.
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(6666, '127.0.0.1', resolve),
    );
    try {
      const env = { INGEST_ENV: 'development', ADMIN_HOST: '127.0.0.1', ADMIN_PORT: '6666' };
      const refused = await probe(env);
      expect([refused.code, refused.stderr]).toEqual([
        1,
        'warehouse-ingest: http://127.0.0.1:6666/healthz answered 503\n',
      ]);
      status = 200;
      expect(await probe(env)).toMatchObject({ code: 0, stderr: '' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  async function probe(env: Record<string, string>) {
    return runCli(['healthcheck'], { env, timeoutMs: 30_000 });
  }

  for (const variant of [
    {
      name: 'https',
      http: () => ({ host: '127.0.0.1', tls: { cert, key } }),
      adminHost: '0.0.0.0',
    },
    { name: 'plain', http: () => ({ host: '127.0.0.1' }), adminHost: '127.0.0.1' },
  ]) {
    it(`exits 0 while a ${variant.name} service runs (admin on ${variant.adminHost}), 1 once it stopped`, async () => {
      const env = await serviceEnv(variant.name, variant.http(), variant.adminHost);
      let service: RunningService | undefined = await startService({
        env,
        log: createLogger({ level: 'silent' }),
      });
      try {
        if (variant.name === 'https') expect(service.url).toMatch(/^https:/);
        const healthy = await probe(env);
        expect(healthy.stderr).toBe('');
        expect(healthy.code).toBe(0);
        await service.stop();
        service = undefined;
        const down = await probe(env);
        expect(down.code).toBe(1);
        expect(down.stderr).toMatch(
          /^warehouse-ingest: http:\/\/127\.0\.0\.1:\d+\/healthz did not answer: /,
        );
      } finally {
        await service?.stop();
      }
    });
  }
});
