import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSftpDrop } from '../../../src/stores/sftp/index.js';
import { sftpOptionsFor } from '../../support/sftp-fixture.js';
import { startSshd } from '../../support/sshd.js';
import { describeStoreOutages } from './outage-contract.js';

describeStoreOutages('sftp (OpenSSH)', 'sftp-outage', async () => {
  const sshd = await startSshd();
  const drop = path.join(sshd.dataDir, 'drop');
  mkdirSync(drop);
  return {
    store: createSftpDrop(sftpOptionsFor(sshd, { timeoutMs: 2000, readyTimeoutMs: 2000 })),
    async put(name, content) {
      writeFileSync(path.join(drop, name), content);
    },
    stop: () => sshd.kill(),
    restart: () => sshd.restart(),
    cleanup: () => sshd.stop(),
  };
});
