import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { pipelineSchema } from '../../../src/drops/definition.js';
import { createDropRunner } from '../../../src/drops/runner.js';
import { createSftpDrop } from '../../../src/stores/sftp/index.js';
import { createLogger } from '../../../src/log.js';
import { createIngest } from '../../../src/ingest/flow.js';
import { compileRoutingKey } from '../../../src/ingest/route.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../../src/publish/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../../support/broker.js';
import { cliEntry } from '../../support/cli-entry.js';
import { sftpOptionsFor } from '../../support/sftp-fixture.js';
import { startSshd, type TestSshd } from '../../support/sshd.js';
import { tempFolder } from '../../support/temp.js';
import { ordersCsv, PROFILE } from './drop-contract.js';

/**
 * Linux's default `fs.protected_hardlinks=1`: a user may hard-link only files it owns (or may
 * write). A worker running as another user than the partner's upload (0644) cannot claim by
 * link + unlink; it must claim by rename. Reproduced for real: the worker runs as `nobody` (the
 * local drop through `run --once` in a child process, the SFTP drop as an SFTP login) and the
 * partner's file belongs to root. Root itself is exempt (CAP_FOWNER), hence the other user.
 */
const NOBODY = 65534;
const ROOT = new URL('../../..', import.meta.url).pathname;

beforeAll(() => {
  expect(
    readFileSync('/proc/sys/fs/protected_hardlinks', 'utf8').trim(),
    'protected_hardlinks',
  ).toBe('1');
  expect(process.getuid?.(), 'these tests switch to nobody, which needs root').toBe(0);
});

/**
 * The worker runs the code of this checkout as nobody, and a checkout may lie in a private folder
 * (`mktemp -d` makes it 0700). Every folder above it that others cannot pass through is given
 * o+x (passing through, not listing) for the tests of this file, and its mode given back after.
 */
const passable: Array<{ dir: string; mode: number }> = [];
beforeAll(() => {
  for (let dir = ROOT; ; dir = path.dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001);
      passable.push({ dir, mode });
    }
    if (dir === path.dirname(dir)) break;
  }
});
afterAll(() => {
  for (const { dir, mode } of passable) chmodSync(dir, mode);
});

let topology: TestTopology;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});
afterAll(() => topology.cleanup());

/** A folder `nobody` owns (the worker's drop), with a file in it that root (the partner) owns. */
function dropOwnedByNobody(parent: string, file: string, content: string): string {
  const drop = path.join(parent, 'drop');
  mkdirSync(drop, { recursive: true });
  chownSync(drop, NOBODY, NOBODY);
  writeFileSync(path.join(drop, file), content, { mode: 0o644 });
  return drop;
}

describe('claims under fs.protected_hardlinks, worker and partner being different users', () => {
  it('local: run --once as nobody claims, publishes and settles a file root uploaded', async () => {
    const temp = tempFolder('hardlinks-');
    chmodSync(temp.dir, 0o755);
    const csv = ordersCsv('HARDLINK').replaceAll('ACME,', 'DEMO,');
    const drop = dropOwnedByNobody(temp.dir, 'orders.csv', csv);
    const data = path.join(temp.dir, 'data');
    mkdirSync(data);
    chownSync(data, NOBODY, NOBODY);
    const pipeline = temp.write(
      'demo.yaml',
      `name: hardlinks\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: ${drop} }\nreadiness: { strategy: rename }\n`,
    );
    const config = temp.write(
      'config.yaml',
      `dataDirectory: ${data}\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\n`,
    );
    for (const file of [pipeline, config]) chownSync(file, NOBODY, NOBODY);
    const { code, stdout, stderr } = await new Promise<{
      code: number;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      execFile(
        'setpriv',
        [
          '--reuid=nobody',
          '--regid=nogroup',
          '--clear-groups',
          '--',
          process.execPath,
          cliEntry(),
          'run',
          pipeline,
          '--once',
        ],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            INGEST_CONFIG: config,
            AMQP_URL,
            LOG_LEVEL: 'warn',
            HOME: temp.dir,
          },
          timeout: 60_000,
        },
        (error, out, err) =>
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
            stdout: out,
            stderr: err,
          }),
      );
    });
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!), stderr).toMatchObject({
      accepted: 1,
      retried: 0,
    });
    expect(existsSync(path.join(drop, 'processed/orders.csv'))).toBe(true);
    expect(
      JSON.parse(readFileSync(path.join(drop, 'processed/orders.csv.receipt.json'), 'utf8')),
    ).toMatchObject({
      outcome: 'accepted',
      response: { recordCount: 2 },
    });
    expect(await topology.count()).toBe(2);
    await topology.messages();
  });

  describe("sftp: the SFTP login is nobody, the file is root's", () => {
    let sshd: TestSshd;
    let publisher: RabbitMqPublisher;
    const log = createLogger({ level: 'silent' });
    beforeAll(async () => {
      sshd = await startSshd();
      // The server's folders must be reachable by nobody (mkdtemp made them owner-only).
      chmodSync(path.dirname(sshd.dataDir), 0o755);
      chmodSync(sshd.dataDir, 0o755);
      publisher = createRabbitMqPublisher(
        { url: AMQP_URL, exchange: topology.exchange, queues: [] },
        log,
      );
      await publisher.start();
    });
    afterAll(async () => {
      await publisher?.close();
      await sshd?.stop();
    });

    it('claims by rename where the server refuses the hard link, never over an existing name, one winner of two', async () => {
      const drop = dropOwnedByNobody(sshd.dataDir, 'race.csv', 'x');
      writeFileSync(path.join(drop, 'taken.csv'), 'y', { mode: 0o644 });
      writeFileSync(path.join(drop, 'other.csv'), 'z', { mode: 0o644 });
      const store = createSftpDrop(sftpOptionsFor(sshd, { username: 'nobody', path: 'drop' }));
      try {
        const [a, b] = await Promise.all([
          store.rename('race.csv', '.warehouse-ingest/claims/1~a~race.csv'),
          store.rename('race.csv', '.warehouse-ingest/claims/1~b~race.csv'),
        ]);
        expect([a, b].filter(Boolean)).toHaveLength(1);
        expect(await store.rename('other.csv', 'taken.csv')).toBe(false);
        expect(readFileSync(path.join(drop, 'taken.csv'), 'utf8')).toBe('y');
        expect(await store.rename('gone.csv', 'anywhere.csv')).toBe(false);
      } finally {
        await store.close();
      }
    });

    it('a drop runner logged in as nobody processes a file root uploaded', async () => {
      const folder = path.join(sshd.dataDir, 'run');
      mkdirSync(folder);
      chmodSync(folder, 0o755);
      const drop = dropOwnedByNobody(folder, 'orders.csv', ordersCsv('SFTP-HARDLINK'));
      const store = createSftpDrop(sftpOptionsFor(sshd, { username: 'nobody', path: 'run/drop' }));
      const spool = tempFolder('hardlinks-spool-');
      const runner = createDropRunner({
        pipeline: pipelineSchema.parse({
          name: `hardlinks-${process.pid}`,
          businessId: 'ACME',
          kind: 'sales-orders',
          format: 'v1-csv',
          source: { type: 'local', path: '/unused' },
          readiness: { strategy: 'rename' },
        }),
        store,
        ingest: createIngest({
          publisher,
          routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
        }),
        onboarding: { ACME: { 'sales-orders': PROFILE } },
        log,
        spoolDirectory: spool.dir,
      });
      try {
        expect(await runner.runOnce()).toMatchObject({ accepted: 1, retried: 0, parked: 0 });
      } finally {
        await runner.stop();
        await store.close();
      }
      expect(existsSync(path.join(drop, 'processed/orders.csv'))).toBe(true);
      expect(existsSync(path.join(drop, 'processed/orders.csv.receipt.json'))).toBe(true);
      expect(await topology.count()).toBe(2);
      await topology.messages();
    });
  });
});
