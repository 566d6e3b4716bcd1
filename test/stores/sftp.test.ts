import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DropUnavailable } from '../../src/errors.js';
import { knownHostKeys } from '../../src/stores/sftp/host-keys.js';
import { createSftpDrop, SftpError, type SftpDropOptions } from '../../src/stores/sftp/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { startSshd, type TestSshd } from '../support/sshd.js';
import { tempFolder } from '../support/temp.js';
import { describeDropStore, readAll } from './store-contract.js';
import { sftpFixture, sftpOptionsFor } from '../support/sftp-fixture.js';

const temp = tempFolder('sftp-test-');

const optionsFor = sftpOptionsFor;

const stores: DropStore[] = [];
function storeFor(sshd: TestSshd, extra: Partial<SftpDropOptions> = {}): DropStore {
  const store = createSftpDrop(optionsFor(sshd, extra));
  stores.push(store);
  return store;
}
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

/** The SftpError codes the store maps to `DropUnavailable` (an outage), the others pass as they are. */
const OUTAGES: readonly SftpError['code'][] = [
  'sftp-unreachable',
  'sftp-timeout',
  'sftp-connection-lost',
];

/**
 * Rejects with an SftpError of `code` — wrapped in `DropUnavailable` when it is an outage — and
 * returns the SftpError for more checks.
 */
async function sftpFailure(promise: Promise<unknown>, code: SftpError['code']): Promise<SftpError> {
  const error = await promise.then(
    () => expect.unreachable('expected the call to fail'),
    (e: unknown) => e,
  );
  const outage = OUTAGES.includes(code);
  expect(error).toBeInstanceOf(outage ? DropUnavailable : SftpError);
  const sftpError = outage ? (error as DropUnavailable).cause : error;
  expect(sftpError).toBeInstanceOf(SftpError);
  expect((sftpError as SftpError).code).toBe(code);
  return sftpError as SftpError;
}

describeDropStore('sftp (OpenSSH)', sftpFixture);

describe('sftp drop: host keys and secrets', () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(() => sshd?.stop());

  it('refuses to be created without a pinned host key or known_hosts', () => {
    expect(() => createSftpDrop({ ...optionsFor(sshd), hostKeyFingerprints: undefined })).toThrow(
      /never trusted blindly/,
    );
    expect(() =>
      createSftpDrop({ ...optionsFor(sshd), hostKeyFingerprints: ['ab:cd:ef'] }),
    ).toThrow(/SHA256:<base64>/);
  });

  it('refuses a server whose key does not match the pinned fingerprint, naming the key it saw', async () => {
    const wrong = `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}`;
    const store = storeFor(sshd, { hostKeyFingerprints: [wrong] });
    const error = await sftpFailure(store.write('never.txt', 'x'), 'sftp-host-key-rejected');
    expect(error.message).toContain(sshd.hostKeyFingerprint);
    expect(error.message).toContain(`${sshd.host}:${sshd.port}`);
    expect(error.message).not.toContain('PRIVATE KEY');
    expect(existsSync(path.join(sshd.dataDir, 'drop', 'never.txt'))).toBe(false);
    await sftpFailure(store.list(), 'sftp-host-key-rejected'); // and again: no fallback to trust
  });

  it('connects with a known_hosts file, plain or hashed, and refuses one that lists other hosts only', async () => {
    const knownHosts = readFileSync(sshd.knownHostsPath, 'utf8');
    const plain = storeFor(sshd, {
      hostKeyFingerprints: undefined,
      knownHosts,
      path: path.join(sshd.dataDir, 'kh'),
    });
    await plain.write('a.txt', 'A');
    expect((await readAll(await plain.read('a.txt'))).toString()).toBe('A');
    expect(plain.where).toBe(`sftp://${sshd.username}@127.0.0.1:${sshd.port}${sshd.dataDir}/kh`);

    const hashedFile = temp.write('known_hosts', knownHosts);
    execFileSync('ssh-keygen', ['-H', '-f', hashedFile], { stdio: 'ignore' });
    const hashed = readFileSync(hashedFile, 'utf8');
    expect(hashed).toMatch(/^\|1\|/);
    expect(
      (
        await storeFor(sshd, {
          hostKeyFingerprints: undefined,
          knownHosts: hashed,
          path: path.join(sshd.dataDir, 'kh'),
        }).list()
      ).map((e) => e.name),
    ).toEqual(['a.txt']);

    const otherHost = knownHosts.replace(`[127.0.0.1]:${sshd.port}`, 'sftp.example.com');
    const refused = await sftpFailure(
      storeFor(sshd, { hostKeyFingerprints: undefined, knownHosts: otherHost }).list(),
      'sftp-host-key-rejected',
    );
    expect(refused.message).toContain(sshd.hostKeyFingerprint);

    const revoked = `${knownHosts}@revoked ${knownHosts}`;
    await sftpFailure(
      storeFor(sshd, { hostKeyFingerprints: undefined, knownHosts: revoked }).list(),
      'sftp-host-key-rejected',
    );
  });

  it('writes a file larger than one SFTP packet byte-exact, leaving no temporary file', async () => {
    const store = storeFor(sshd);
    const big = randomBytes(2 * 1024 * 1024 + 3);
    await store.write('w/big.bin', big);
    expect(readFileSync(path.join(sshd.dataDir, 'drop', 'w', 'big.bin')).equals(big)).toBe(true);
    expect((await store.list('w')).map((e) => e.name)).toEqual(['w/big.bin']);
  });

  it('never puts a password into an error', async () => {
    const password = 'correct horse battery staple';
    const store = storeFor(sshd, { privateKey: undefined, password });
    const error = await sftpFailure(store.list(), 'sftp-unreachable'); // the server takes keys only
    expect(error.message).toMatch(/authentication/i);
    expect(`${error.message} ${String(error.cause)}`).not.toContain(password);
  });
});

describe('sftp drop: known_hosts matching', () => {
  const key = randomBytes(51);
  const line = (hosts: string, marker = '') =>
    `${marker}${hosts} ssh-ed25519 ${key.toString('base64')}`;
  const trusted = (contents: string, host: string, port: number) =>
    knownHostKeys(contents, host, port).trusted.length;

  it.each([
    ['127.0.0.1', 22, 1],
    ['127.0.0.1', 2222, 0], // a bare name means port 22
    ['sftp.example.com', 22, 1],
    ['bad.example.com', 22, 0], // negated
  ])('matches %s port %i by name, wildcard and negation (%i)', (host, port, expected) => {
    expect(
      trusted(
        [line('127.0.0.1'), line('*.example.com,!bad.example.com'), '# a comment', ''].join('\n'),
        host,
        port,
      ),
    ).toBe(expected);
  });

  it('matches [host]:port entries with wildcards, and skips CA lines', () => {
    const contents = [line('[127.0.0.?]:2222'), line('*', '@cert-authority ')].join('\n');
    expect(trusted(contents, '127.0.0.1', 2222)).toBe(1);
    expect(trusted(contents, '127.0.0.1', 2223)).toBe(0);
    expect(
      knownHostKeys(line('[127.0.0.1]:2222', '@revoked '), '127.0.0.1', 2222).revoked,
    ).toHaveLength(1);
  });
});

describe('sftp drop: server failures', () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(() => sshd?.stop());
  afterEach(async () => {
    sshd.thaw();
    await sshd.restart().catch(() => undefined); // running already unless the test killed it
  });

  it('reconnects on the next call after the server was killed and restarted', async () => {
    const store = storeFor(sshd);
    await store.write('r/one.txt', '1');
    await sshd.kill();
    await expect(store.list('r')).rejects.toBeInstanceOf(DropUnavailable);
    await sshd.restart();
    await vi.waitFor(
      async () => expect((await store.list('r')).map((e) => e.name)).toEqual(['r/one.txt']),
      { timeout: 10_000, interval: 50 },
    );
    await store.write('r/two.txt', '2');
    expect((await store.list('r')).map((e) => e.name)).toEqual(['r/one.txt', 'r/two.txt']);
  });

  it('ends a read stream with an error when the server dies mid-file', async () => {
    const store = storeFor(sshd);
    mkdirSync(path.join(sshd.dataDir, 'drop', 'big'), { recursive: true });
    writeFileSync(path.join(sshd.dataDir, 'drop', 'big', 'x.bin'), randomBytes(16 * 1024 * 1024));
    const stream = await store.read('big/x.bin');
    const reading = (async () => {
      let bytes = 0;
      for await (const chunk of stream) {
        bytes += (chunk as Buffer).length;
        if (bytes === (chunk as Buffer).length) await sshd.kill(); // after the first chunk
      }
      return bytes;
    })();
    await expect(reading).rejects.toBeInstanceOf(DropUnavailable); // mapped mid-stream too
  });

  it('fails a call on a server that stopped answering within the timeout, then reconnects', async () => {
    // 1.5 s, not less: the pure-JS SSH handshake alone can take ~0.5 s on a loaded 2-core machine.
    const store = storeFor(sshd, { timeoutMs: 1_500, readyTimeoutMs: 1_500 });
    await store.write('t/a.txt', 'a');
    sshd.freeze();
    let began = performance.now();
    const error = await sftpFailure(store.list('t'), 'sftp-timeout');
    expect(performance.now() - began).toBeLessThan(4_000);
    expect(error.message).toContain(`127.0.0.1:${sshd.port}`);

    began = performance.now();
    await sftpFailure(store.stat('t/a.txt'), 'sftp-timeout'); // a new connection gets no handshake
    expect(performance.now() - began).toBeLessThan(4_000);

    sshd.thaw();
    expect(await store.stat('t/a.txt')).toMatchObject({ name: 't/a.txt', size: 1 });
  });

  it('ends a read stream with a timeout when the server stops sending mid-file', async () => {
    const store = storeFor(sshd, { timeoutMs: 500 });
    mkdirSync(path.join(sshd.dataDir, 'drop', 'slow'), { recursive: true });
    writeFileSync(path.join(sshd.dataDir, 'drop', 'slow', 'x.bin'), randomBytes(16 * 1024 * 1024));
    const stream = await store.read('slow/x.bin');
    let frozenAt = 0;
    const reading = (async () => {
      for await (const chunk of stream) {
        if (frozenAt === 0) {
          expect((chunk as Buffer).length).toBeGreaterThan(0);
          sshd.freeze();
          frozenAt = performance.now();
        }
      }
    })();
    await sftpFailure(reading, 'sftp-timeout');
    expect(performance.now() - frozenAt).toBeLessThan(2_000);
  });

  it('fails at once when nothing listens', async () => {
    const store = storeFor(sshd, { timeoutMs: 500, readyTimeoutMs: 500 });
    await sshd.kill();
    const began = performance.now();
    const error = await sftpFailure(store.list(), 'sftp-unreachable');
    expect(error.message).toMatch(/ECONNREFUSED|refused/);
    expect(performance.now() - began).toBeLessThan(500);
  });
});
