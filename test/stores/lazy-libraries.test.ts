import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(path.join(tmpdir(), 'lazy-libraries-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * In a fresh process (a test worker may already hold the libraries): loads the composition root and
 * the CLI's modules, makes one store of each kind without using the SFTP and S3 ones, then (`use`)
 * sends each a request to a port nobody listens on. Prints the CommonJS modules loaded by then.
 */
const script = (use: boolean) => `
import { createRequire } from 'node:module';
const cache = createRequire(${JSON.stringify(ROOT)}).cache;
const loaded = () => ({
  ssh2: Object.keys(cache).filter((file) => /node_modules\\/ssh2(-sftp-client)?\\//.test(file)).length,
  aws: Object.keys(cache).filter((file) => /node_modules\\/@(aws-sdk|smithy)\\//.test(file)).length,
});
await import('./src/main.ts');
await import('./src/cli/run.ts');
await import('./src/events/index.ts');
const { createLocalDrop } = await import('./src/stores/local/index.ts');
const { createSftpDrop } = await import('./src/stores/sftp/index.ts');
const { createS3Drop } = await import('./src/stores/s3/index.ts');
const local = createLocalDrop({ path: ${JSON.stringify(dir)} });
await local.list();
const sftp = createSftpDrop({ host: '127.0.0.1', port: 9, username: 'nobody', password: 'x', path: '/', hostKeyFingerprints: ['SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'], timeoutMs: 2000 });
const s3 = createS3Drop({ bucket: 'b', region: 'us-east-1', endpoint: 'http://127.0.0.1:9', forcePathStyle: true, credentials: { accessKeyId: 'a', secretAccessKey: 'b' }, maxAttempts: 1, timeoutMs: 2000 });
if (${use}) {
  await sftp.list().catch(() => undefined);
  await s3.list().catch(() => undefined);
}
await Promise.all([local.close(), sftp.close(), s3.close()]);
console.log(JSON.stringify(loaded()));
`;

function loadedAfter(use: boolean): Promise<{ ssh2: number; aws: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script(use)],
      { cwd: ROOT, timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });
}

describe('SFTP and S3 libraries', () => {
  it('are not loaded by a process that never talks to an SFTP or S3 drop (~38 MiB of memory)', async () => {
    expect(await loadedAfter(false)).toEqual({ ssh2: 0, aws: 0 });
  });

  it('are loaded by the first request to such a drop', async () => {
    const loaded = await loadedAfter(true);
    expect(loaded.ssh2).toBeGreaterThan(0);
    expect(loaded.aws).toBeGreaterThan(0);
  });
});
