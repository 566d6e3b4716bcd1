import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A private s3rver (S3 protocol on the local disk) for one test file. */
export interface S3rver {
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Created at start, empty. */
  readonly bucket: string;
  readonly dataDir: string;
  /** A client configured for this server, for test setup behind the store's back. */
  readonly client: S3Client;
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
  /** SIGKILLs the server (a crash); data and port are kept for `restart()`. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  restart(): Promise<void>;
  /** SIGSTOPs the server: connections are accepted by the kernel but never answered. */
  freeze(): void;
  thaw(): void;
}

const BIN = createRequire(import.meta.url).resolve('s3rver/bin/s3rver.js');
const STARTUP_MS = 10_000;
// s3rver's one hard-coded account.
const ACCESS_KEY = 'S3RVER';

/** Servers still running when the test process exits are killed with it. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Spawns s3rver in its own process: in-process on Node 20 its paginated listing fails (its
 * continuation tokens use DES, which needs `--openssl-legacy-provider`).
 */
async function spawnS3rver(
  dataDir: string,
  port: number,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      '--openssl-legacy-provider',
      BIN,
      '-d',
      dataDir,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '--silent',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  const listening = await new Promise<number>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`s3rver ${why}. Its output:\n${output || '(none)'}`));
    };
    const timer = setTimeout(() => fail(`did not come up within ${STARTUP_MS} ms`), STARTUP_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /S3rver listening on [^\s]+:(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(Number(match[1]));
      }
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(`exited (code ${code}, signal ${signal}) before listening`);
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', onExit);
    child.once('error', (error) => fail(`could not be spawned: ${error.message}`));
  });
  return { child, port: listening };
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT'); // a frozen process would not act on SIGTERM
  child.kill(signal);
  await exited;
}

export async function startS3rver(): Promise<S3rver> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 's3rver-'));
  const started = await spawnS3rver(dataDir, 0);
  const { port } = started;
  let { child } = started;
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1';
  const bucket = 'drops';
  const client = new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: ACCESS_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));

  return {
    endpoint,
    region,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: ACCESS_KEY,
    bucket,
    dataDir,
    client,
    async stop() {
      client.destroy();
      await terminate(child, 'SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    },
    async kill() {
      await terminate(child, 'SIGKILL');
    },
    async restart() {
      await terminate(child, 'SIGKILL');
      ({ child } = await spawnS3rver(dataDir, port));
    },
    freeze() {
      child.kill('SIGSTOP');
    },
    thaw() {
      child.kill('SIGCONT');
    },
  };
}
