/**
 * The release folder (`npm run release`, scripts/release.sh) runs on its own: built JavaScript
 * and production dependencies only, started from outside the repository, it answers /healthz and
 * takes the README's demo batch. The Dockerfile copies exactly this folder.
 */
import { execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const temp = tempFolder('release-');
const release = path.join(temp.dir, 'release');

beforeAll(async () => {
  await promisify(execFile)('bash', [path.join(ROOT, 'scripts/release.sh'), release], {
    cwd: ROOT,
    timeout: 240_000,
  }).catch((error: { signal?: string; stdout?: string; stderr?: string }) => {
    // Say why: a time-out (signal) and what the script printed, not only "Command failed".
    throw new Error(
      `scripts/release.sh failed${error.signal ? ` (killed by ${error.signal}: over 240 s)` : ''}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
      { cause: error },
    );
  });
}, 300_000);

describe('npm start without dev dependencies (prestart: scripts/build.mjs --if-stale)', () => {
  const run = promisify(execFile);
  it('runs the dist/ it has, and without one says how to get one (exit 1) instead of "tsc: not found"', async () => {
    // A clone installed with --omit=dev: no TypeScript anywhere above it.
    const clone = path.join(temp.dir, 'omit-dev');
    mkdirSync(path.join(clone, 'scripts'), { recursive: true });
    mkdirSync(path.join(clone, 'src'));
    copyFileSync(path.join(ROOT, 'scripts/build.mjs'), path.join(clone, 'scripts/build.mjs'));
    writeFileSync(path.join(clone, 'package.json'), '{"type":"module"}\n');
    writeFileSync(path.join(clone, 'src/cli.ts'), '');
    const prestart = () =>
      run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: clone }).then(
        ({ stderr }) => ({ code: 0, stderr }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
    const missing = await prestart();
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no dist/ to run and no TypeScript to build it');
    expect(missing.stderr).toContain('npm run release');

    mkdirSync(path.join(clone, 'dist'));
    writeFileSync(path.join(clone, 'dist/cli.js'), '');
    expect(await prestart()).toEqual({ code: 0, stderr: '' });
  });
});

describe('the release folder', () => {
  it('holds the built service, its config and production dependencies only', () => {
    // The embedded history's worker thread is a file of its own, started by path.
    for (const part of [
      'dist/cli.js',
      'dist/history/embedded/worker.js',
      'config/default.yaml',
      'package-lock.json',
    ])
      expect(existsSync(path.join(release, part)), part).toBe(true);
    for (const dev of ['typescript', 'tsx', 'vitest', '@biomejs', 'src'])
      expect(
        existsSync(path.join(release, 'node_modules', dev)) || existsSync(path.join(release, dev)),
        dev,
      ).toBe(false);
    const manifest = JSON.parse(readFileSync(path.join(release, 'package.json'), 'utf8'));
    expect(manifest.scripts).toEqual({
      start: 'node --max-semi-space-size=32 dist/cli.js serve',
    });
    expect(manifest.devDependencies).toBeUndefined();
  });

  describe('started from another working directory', () => {
    const lines: Array<Record<string, unknown>> = [];
    let stderr = '';
    let exited: Promise<number | null>;
    let child: ReturnType<typeof spawn>;
    afterAll(() => {
      if (child?.exitCode === null) child.kill('SIGKILL');
    });

    it('answers /healthz 200 and accepts the demo batch (202), and stops on SIGTERM with 0', async () => {
      const elsewhere = path.join(temp.dir, 'elsewhere');
      const config = temp.write(
        'config.yaml',
        `dataDirectory: ${elsewhere}\nhistory:\n  enabled: true\n`,
      );
      child = spawn(process.execPath, [path.join(release, 'dist/cli.js'), 'serve'], {
        cwd: temp.dir,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          PORT: '0',
          ADMIN_PORT: '0',
          HOST: '127.0.0.1',
          INGEST_CONFIG: config,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      exited = new Promise((resolve) => child.once('exit', resolve));
      let pending = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const complete = pending.split('\n');
        pending = complete.pop()!;
        for (const line of complete) lines.push(JSON.parse(line) as Record<string, unknown>);
      });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

      const started = () => lines.find((l) => String(l.msg).startsWith('listening on '));
      await expect.poll(started, { timeout: 30_000, message: stderr }).toBeDefined();
      expect(started()).toMatchObject({
        environment: 'development',
        publisher: 'embedded',
        pipelinesDirectory: path.join(release, 'pipelines'),
      });
      const url = String(started()!.url);

      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const response = await fetch(`${url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: basicAuth({ businessId: 'DEMO', apiKey: 'demo-api-key' }),
        },
        body: readFileSync(path.join(ROOT, 'fixtures/demo/sales-orders.json')),
      });
      expect(response.status, await response.clone().text()).toBe(202);
      expect(existsSync(path.join(elsewhere, 'outbox'))).toBe(true);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);

      // The history was written by its worker thread (dist/history/embedded/worker.js) and is
      // searched by lineage through it too.
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [path.join(release, 'dist/cli.js'), 'lineage', 'SO-2026-000187', '--json'],
        {
          cwd: temp.dir,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, INGEST_CONFIG: config },
        },
      );
      expect(JSON.parse(stdout.split('\n')[0]!)).toMatchObject({
        source: 'history',
        businessId: 'DEMO',
      });
    }, 90_000);
  });

  it('validates a large CSV drop on two cores with its own worker thread file (run --once, embedded publisher)', async () => {
    const drop = path.join(temp.dir, 'large-drop');
    mkdirSync(drop);
    // Over 4 MiB: the size from which a CSV file's validation pass is split (src/ingest/halves.ts).
    const rows = [
      'AccountID,OrdNumber,DueOutDate,oOrderLines_LineNumber,oOrderLines_ProductID,oOrderLines_Qty,oOrderLines_UoM,oOrderLines_SalesUnitPrice',
    ];
    for (let n = 0; n < 50_000; n++)
      rows.push(
        `DEMO,REL-${n},2026-02-03,1,SKU-${n % 997},2,EA,9.99`,
        `DEMO,REL-${n},2026-02-03,2,SKU-2,1,EA,4.50`,
      );
    writeFileSync(path.join(drop, 'orders.csv'), `${rows.join('\n')}\n`);
    const pipeline = temp.write(
      'large-drop.yaml',
      `name: large\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource:\n  type: local\n  path: ${drop}\nreadiness:\n  strategy: rename\n`,
    );
    mkdirSync(path.join(temp.dir, 'large-data'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [path.join(release, 'dist/cli.js'), 'run', pipeline, '--once'],
      {
        cwd: temp.dir,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          LOG_LEVEL: 'info',
          INGEST_CONFIG: temp.write(
            'large-drop-config.yaml',
            `dataDirectory: ${path.join(temp.dir, 'large-data')}\npipelinesDirectory: ${path.join(temp.dir, 'large-data')}\n`,
          ),
        },
        timeout: 120_000,
      },
    );
    const accepted = stdout
      .split('\n')
      .filter((line) => line.startsWith('{"level"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === 'batch accepted');
    expect(accepted, stdout).toMatchObject({ records: 50_000, validatedInHalves: true });
    const receipt = JSON.parse(
      readFileSync(path.join(drop, 'processed', 'orders.csv.receipt.json'), 'utf8'),
    ) as { outcome: string; response: { recordCount: number } };
    expect(receipt).toMatchObject({ outcome: 'accepted', response: { recordCount: 50_000 } });
  }, 150_000);

  it('refuses to start serve when its SQLite addon does not load on this Node line (one line saying what to do, exit 1)', async () => {
    // What a release built on another Node line looks like here: an addon that does not load. Only
    // this temp release's copy is replaced (moved aside and back), never the checkout's node_modules.
    const addon = path.join(
      release,
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    );
    const aside = `${addon}.aside`;
    renameSync(addon, aside);
    try {
      writeFileSync(addon, 'not a shared object\n');
      const started = await promisify(execFile)(
        process.execPath,
        [path.join(release, 'dist/cli.js'), 'serve'],
        {
          cwd: temp.dir,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            PORT: '0',
            ADMIN_PORT: '0',
            INGEST_CONFIG: temp.write(
              'addon-config.yaml',
              `dataDirectory: ${path.join(temp.dir, 'addon-data')}\nhistory:\n  enabled: true\n`,
            ),
          },
          timeout: 60_000,
        },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(started.code).toBe(1);
      const line = started.stderr.split('\n').find((l) => l.includes('better-sqlite3'));
      expect(line, started.stderr).toContain(`does not load on Node ${process.version}`);
      expect(line).toContain('npm rebuild better-sqlite3');
      expect(line).toContain('the Node line it was built for');
    } finally {
      renameSync(aside, addon);
    }
  }, 90_000);
});
