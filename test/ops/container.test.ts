/**
 * The Dockerfile and compose.yaml against the configuration (no container engine runs here, so
 * what the image would do is checked piece by piece): the image's environment leaves the listen
 * address to the configuration layers, and every volume is mounted where the image made a folder the
 * `node` user owns.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { AMQP_URL } from '../support/broker.js';
import { tempFolder } from '../support/temp.js';

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
});
