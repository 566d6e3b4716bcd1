import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSftpDrop } from '../../src/sources/sftp.js';
import type { StoreFixture } from '../sources/store-contract.js';
import { startSshd } from './sshd.js';

/** A drop on a fresh OpenSSH server: the store under test, and the server's folder to put files in behind its back. */
export async function sftpFixture(): Promise<StoreFixture> {
  const sshd = await startSshd();
  const drop = path.join(sshd.dataDir, 'drop');
  return {
    store: createSftpDrop({
      host: sshd.host,
      port: sshd.port,
      username: sshd.username,
      privateKey: readFileSync(sshd.privateKeyPath),
      hostKeyFingerprints: [sshd.hostKeyFingerprint],
      path: 'drop',
    }),
    async put(name, content) {
      mkdirSync(path.dirname(path.join(drop, name)), { recursive: true });
      writeFileSync(path.join(drop, name), content);
    },
    async has(name) {
      return existsSync(path.join(drop, name));
    },
    cleanup: () => sshd.stop(),
  };
}
