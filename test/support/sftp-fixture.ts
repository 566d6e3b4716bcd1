import { existsSync, mkdirSync, utimesSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSftpDrop, type SftpDropOptions } from '../../src/stores/sftp/index.js';
import type { StoreFixture } from '../stores/store-contract.js';
import { startSshd, type TestSshd } from './sshd.js';

/** Store options for a test server: key auth and its pinned fingerprint unless `extra` says otherwise. */
export function sftpOptionsFor(
  sshd: TestSshd,
  extra: Partial<SftpDropOptions> = {},
): SftpDropOptions {
  return {
    host: sshd.host,
    port: sshd.port,
    username: sshd.username,
    privateKey: readFileSync(sshd.privateKeyPath),
    hostKeyFingerprints: [sshd.hostKeyFingerprint],
    path: 'drop',
    ...extra,
  };
}

/** A drop on a fresh OpenSSH server: the store under test, and the server's folder to put files in behind its back. */
export async function sftpFixture(): Promise<StoreFixture> {
  const sshd = await startSshd();
  const drop = path.join(sshd.dataDir, 'drop');
  return {
    store: createSftpDrop(sftpOptionsFor(sshd)),
    async put(name, content) {
      mkdirSync(path.dirname(path.join(drop, name)), { recursive: true });
      writeFileSync(path.join(drop, name), content);
    },
    async has(name) {
      return existsSync(path.join(drop, name));
    },
    async setModified(name, ms) {
      utimesSync(path.join(drop, name), ms / 1000, ms / 1000);
    },
    cleanup: () => sshd.stop(),
  };
}
