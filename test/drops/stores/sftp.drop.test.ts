import { sftpFixture } from '../../support/sftp-fixture.js';
import { describeDropPipeline } from './drop-contract.js';

describeDropPipeline('sftp (OpenSSH)', sftpFixture, { atomicRename: true });
