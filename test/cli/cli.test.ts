import { mkdirSync, readFileSync } from 'node:fs';
import { tempFolder } from '../support/temp.js';
import { describe, expect, it } from 'vitest';
import { parseApiKeyHash, verifyApiKey } from '../../src/api-keys.js';
import { cliEntry } from '../support/cli-entry.js';
import { runCli } from '../support/cli-process.js';

const cli = (args: string[], input?: string, env: NodeJS.ProcessEnv = {}) =>
  runCli(args, { input, env, timeoutMs: 20_000 });

describe('warehouse-ingest CLI', () => {
  it('hash-key prints a scrypt hash that verifies the key', async () => {
    const { code, stdout } = await cli(['hash-key', 'a-long-enough-api-key-123']);
    expect(code).toBe(0);
    const parsed = parseApiKeyHash(stdout.trim());
    expect(parsed).toBeDefined();
    expect(await verifyApiKey('a-long-enough-api-key-123', parsed!)).toBe(true);
    expect(await verifyApiKey('another-key', parsed!)).toBe(false);
  });

  it('hash-key - reads the key from standard input, keeping it out of argv', async () => {
    const { code, stdout } = await cli(['hash-key', '-'], 'key-from-stdin-0123456789\n');
    expect(code).toBe(0);
    expect(await verifyApiKey('key-from-stdin-0123456789', parseApiKeyHash(stdout.trim())!)).toBe(
      true,
    );
  });

  it('--version and -v print the package version', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const { code, stdout } = await cli([flag]);
      expect(code).toBe(0);
      expect(stdout).toBe(`warehouse-ingest ${version}\n`);
    }
  });

  it('answers an unknown command with one line and usage, exit 2', async () => {
    const { code, stderr } = await cli(['frobnicate']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^warehouse-ingest: unknown command "frobnicate"/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('serve with a broken config prints the file and field, no stack trace, exit 1', async () => {
    const { code, stderr } = await cli(['serve'], undefined, { PORT: 'eighty' });
    expect(code).toBe(1);
    expect(stderr).toBe(
      'warehouse-ingest: invalid configuration:\nenvironment variable PORT: http.port: Expected number, received string\n',
    );
  });
});

describe('commands that never publish run in production without AMQP_URL', () => {
  const temp = tempFolder('no-broker-');
  mkdirSync(`${temp.dir}/pipelines`);
  const env = {
    INGEST_ENV: 'production',
    AMQP_URL: '',
    INGEST_CONFIG: temp.write(
      'config.yaml',
      `dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${temp.dir}/pipelines\n`,
    ),
  };

  it('status', async () => {
    expect(await cli(['status'], undefined, env)).toMatchObject({
      code: 0,
      stdout: `no pipelines: ${temp.dir}/pipelines has no *.yaml pipeline\n`,
    });
  });

  it('lineage', async () => {
    expect(await cli(['lineage', 'SO-NOWHERE'], undefined, env)).toMatchObject({
      code: 1,
      stderr: 'warehouse-ingest: no lineage of "SO-NOWHERE"\n',
    });
  });

  it('validate', async () => {
    const file = 'fixtures/demo/sales-orders.json';
    const args = ['validate', file, '--kind', 'sales-orders', '--format', 'v2-json'];
    expect(await cli(args, undefined, env)).toMatchObject({ code: 0, stderr: '' });
  });

  it('but lint still requires it, as serve does (serve publishes)', async () => {
    const lint = await cli(['lint'], undefined, env);
    expect(lint.code).toBe(1);
    expect(lint.stderr).toContain('broker.url: Required in production');
  });
});

describe('warehouse-ingest serve', () => {
  it('starts on the embedded defaults, serves, and exits 0 on SIGTERM', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const data = mkdtempSync(`${tmpdir()}/serve-`);
    writeFileSync(`${data}/config.yaml`, `dataDirectory: ${data}\n`);
    const child = spawn(process.execPath, [cliEntry(), 'serve'], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: {
        ...process.env,
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_ENV: 'development',
        INGEST_CONFIG: `${data}/config.yaml`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/[^"\s]+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      void exited.then(() => reject(new Error(`serve exited early:\n${output}`)));
    });
    expect(output).toContain('"publisher":"embedded"');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('"msg":"stopped"');
  });
});
