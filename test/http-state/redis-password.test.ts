/**
 * A Redis that requires a password (a private redis-server started here): the password comes
 * from `sharedState.redis.passwordFile`, owner-only, and never appears in a message; the same
 * behind a private sentinel that requires its own (`sentinelPasswordFile`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/operator-errors.js';
import { openSharedState } from '../../src/http-state/index.js';
import { createLogger } from '../../src/log.js';
import { LogCapture } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const PASSWORD = 'redis-test-password-8d1f';
const temp = tempFolder('redis-password-');
let server: ChildProcess;
let port: number;

beforeAll(async () => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  port = (probe.address() as net.AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--requirepass',
      PASSWORD,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    server.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('Ready to accept connections')) resolve();
    });
    server.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
});

afterAll(() => {
  server?.kill('SIGTERM');
});

function configWith(name: string, redis: Record<string, unknown>) {
  return loadConfig({
    env: {
      INGEST_ENV: 'sandbox',
      INGEST_CONFIG: temp.write(name, stringify({ sharedState: { redis } })),
    },
  });
}

describe('a Redis with a password', () => {
  it('connects with the password from passwordFile, and logs where, never the password', async () => {
    const logs = new LogCapture();
    const config = configWith('good.yaml', {
      url: `redis://127.0.0.1:${port}/0`,
      passwordFile: temp.write('password', `${PASSWORD}\n`),
      keyPrefix: 'password-test:',
    });
    const state = await openSharedState(config, createLogger({ destination: logs }));
    try {
      expect(state.kind).toBe('redis');
      expect(await state.buckets.take('b', 2, 60_000)).toMatchObject({ allowed: true });
      expect(logs.raw.join('\n')).toContain(`redis://127.0.0.1:${port}/0`);
      expect(logs.raw.join('\n')).not.toContain(PASSWORD);
    } finally {
      await state.close();
    }
  });

  it('without it, the state is never reached (the service starts not ready), and the warning names where, never the password', async () => {
    const logs = new LogCapture();
    for (const [file, url] of [
      ['none.yaml', `redis://127.0.0.1:${port}/0`],
      ['wrong.yaml', `redis://:not-${PASSWORD}@127.0.0.1:${port}/0`],
    ] as const) {
      const state = await openSharedState(
        configWith(file, { url }),
        createLogger({ destination: logs }),
      );
      expect(state.reachedOnce).toBe(false);
      await state.close();
    }
    const warnings = logs.lines.filter((l) => l.level === 'warn');
    expect(warnings.map((l) => l.sharedState)).toEqual([
      `redis://127.0.0.1:${port}/0`,
      `redis://127.0.0.1:${port}/0`,
    ]);
    expect(logs.raw.join('\n')).not.toContain(PASSWORD);
  });

  it('refuses a password file that group or others may read, naming the field', async () => {
    const config = configWith('exposed.yaml', {
      url: `redis://127.0.0.1:${port}/0`,
      passwordFile: temp.write('exposed-password', PASSWORD, 0o644),
    });
    const opening = openSharedState(config, createLogger({ level: 'silent' }));
    await expect(opening).rejects.toBeInstanceOf(ConfigError);
    await expect(opening).rejects.toThrow(/sharedState\.redis\.passwordFile.*chmod 600/s);
  });
});

describe('behind a Sentinel that requires a password', () => {
  const SENTINEL_PASSWORD = 'sentinel-test-password-51a7';
  let sentinel: ChildProcess;
  let sentinelPort: number;

  beforeAll(async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    sentinelPort = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    // Sentinel rewrites its file: one of its own, writable.
    const file = temp.write(
      'sentinel.conf',
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${temp.dir}`,
        `requirepass ${SENTINEL_PASSWORD}`,
        `sentinel monitor pw-master 127.0.0.1 ${port} 1`,
        `sentinel auth-pass pw-master ${PASSWORD}`,
        '',
      ].join('\n'),
    );
    sentinel = spawn('redis-server', [file, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    await new Promise<void>((resolve, reject) => {
      sentinel.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('+monitor master pw-master')) resolve();
      });
      sentinel.once('exit', (code) => reject(new Error(`sentinel exited (${code}): ${output}`)));
    });
  });

  afterAll(() => {
    sentinel?.kill('SIGTERM');
  });

  const sentinelConfig = (name: string, sentinelPasswordFile: string) =>
    configWith(name, {
      sentinels: [`127.0.0.1:${sentinelPort}`],
      masterName: 'pw-master',
      passwordFile: temp.write(`${name}-password`, `${PASSWORD}\n`),
      sentinelPasswordFile,
      keyPrefix: 'password-test:',
    });

  it('finds the master with sentinelPasswordFile, connects with passwordFile, and logs where, never a password', async () => {
    const logs = new LogCapture();
    const config = sentinelConfig(
      'sentinel-good.yaml',
      temp.write('sentinel-password', `${SENTINEL_PASSWORD}\n`),
    );
    const state = await openSharedState(config, createLogger({ destination: logs }));
    try {
      expect(await state.buckets.take('s', 2, 60_000)).toMatchObject({ allowed: true });
      const text = logs.raw.join('\n');
      expect(text).toContain(`sentinel://127.0.0.1:${sentinelPort}/pw-master`);
      expect(text).toContain(`shared state: on the master at 127.0.0.1:${port}`);
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(SENTINEL_PASSWORD);
    } finally {
      await state.close();
    }
  });

  it('with a wrong sentinel password, the state is never reached, and the warning names the set, never the password', async () => {
    const config = sentinelConfig(
      'sentinel-wrong.yaml',
      temp.write('sentinel-wrong-password', `not-${SENTINEL_PASSWORD}`),
    );
    const logs = new LogCapture();
    const state = await openSharedState(config, createLogger({ destination: logs }));
    expect(state.reachedOnce).toBe(false);
    await state.close();
    expect(logs.lines.filter((l) => l.level === 'warn').map((l) => l.sharedState)).toEqual([
      `sentinel://127.0.0.1:${sentinelPort}/pw-master`,
    ]);
    expect(logs.raw.join('\n')).not.toMatch(/sentinel-test-password/);
  });

  it('refuses a sentinel password file that others may read, naming the field', async () => {
    const config = sentinelConfig(
      'sentinel-exposed.yaml',
      temp.write('sentinel-exposed-password', SENTINEL_PASSWORD, 0o644),
    );
    const opening = openSharedState(config, createLogger({ level: 'silent' }));
    await expect(opening).rejects.toBeInstanceOf(ConfigError);
    await expect(opening).rejects.toThrow(/sharedState\.redis\.sentinelPasswordFile.*chmod 600/s);
  });
});
