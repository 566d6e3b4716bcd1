import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseApiKeyHash, verifyApiKey } from '../../src/api-keys.js';

const run = promisify(execFile);
const CLI = ['--import', 'tsx', 'src/cli.ts'];

async function cli(args: string[], input?: string, env: NodeJS.ProcessEnv = {}) {
  const child = run(process.execPath, [...CLI, ...args], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, ...env },
    timeout: 20_000,
  });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  return child.then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

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
    expect(await verifyApiKey('key-from-stdin-0123456789', parseApiKeyHash(stdout.trim())!)).toBe(true);
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
    expect(stderr).toBe('warehouse-ingest: invalid configuration:\nenvironment: http.port: Expected number, received string\n');
  });
});
