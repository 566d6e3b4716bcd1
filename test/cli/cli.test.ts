import { describe, expect, it } from 'vitest';
import { parseApiKeyHash, verifyApiKey } from '../../src/api-keys.js';
import { runCli } from '../support/cli-process.js';

const CLI = ['--import', 'tsx', 'src/cli.ts'];
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
      'warehouse-ingest: invalid configuration:\nenvironment: http.port: Expected number, received string\n',
    );
  });
});

describe('warehouse-ingest serve', () => {
  it('starts on the embedded defaults, serves, and exits 0 on SIGTERM', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const data = mkdtempSync(`${tmpdir()}/serve-`);
    writeFileSync(`${data}/config.yaml`, `dataDirectory: ${data}\n`);
    const child = spawn(process.execPath, [...CLI, 'serve'], {
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
