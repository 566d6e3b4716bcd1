import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeAddress } from '../../src/broker/connection.js';
import type { PipelineStatus } from '../../src/cli/status.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { demoTenantYaml } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';

const cli = (args: string[], env: NodeJS.ProcessEnv) => runCli(args, { env });

const state = (sha256: string, fields: Record<string, unknown>) =>
  JSON.stringify({ sha256, file: `${sha256.slice(0, 4)}.csv`, attempts: 1, ...fields });

describe('warehouse-ingest status', () => {
  let topology: TestTopology;
  const temp = tempFolder('status-cli-');
  const drop = path.join(temp.dir, 'drop');
  const env: NodeJS.ProcessEnv = { AMQP_URL };

  beforeAll(async () => {
    topology = await declareTestTopology({ bindingKeys: ['#'] });
    mkdirSync(drop);
    mkdirSync(path.join(temp.dir, 'pipelines'));
    const pipelineFile = temp.write(
      'pipelines/demo.yaml',
      `name: demo-drop\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: ${drop} }\nreadiness: { strategy: rename }\n`,
    );
    // A second pipeline whose drop cannot be read (its folder is a file).
    writeFileSync(path.join(temp.dir, 'not-a-folder'), '');
    temp.write(
      'pipelines/broken.yaml',
      `name: broken-drop\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: ${temp.dir}/not-a-folder }\n`,
    );
    env.INGEST_CONFIG = temp.write(
      'config.yaml',
      `dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${temp.dir}/pipelines\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\n`,
    );
    writeFileSync(
      path.join(drop, 'good.csv'),
      ordersCsv(`ST-${Date.now()}`).replaceAll('ACME,', 'DEMO,'),
    );
    writeFileSync(path.join(drop, 'bad.csv'), 'not,a,legacy,file\n1,2,3,4\n');
    const run = await cli(['run', pipelineFile, '--once'], env);
    expect(run.code, run.stderr).toBe(0);
    // Two more inputs as other workers would have left them: one waiting for a retry, one given up on.
    const states = path.join(drop, '.warehouse-ingest', 'state');
    writeFileSync(
      path.join(states, `${'a'.repeat(64)}.json`),
      state('a'.repeat(64), {
        status: 'retry-scheduled',
        attempts: 2,
        lastError: 'Channel closed by server',
        nextAttemptAt: '2099-01-01T00:00:00.000Z',
        updatedAt: '2098-01-01T00:00:00.000Z',
      }),
    );
    writeFileSync(
      path.join(states, `${'b'.repeat(64)}.json`),
      state('b'.repeat(64), {
        status: 'dead',
        attempts: 5,
        lastError: 'Gave up after 5 tries',
        updatedAt: '2000-01-01T00:00:00.000Z',
      }),
    );
  });
  afterAll(async () => {
    await topology.cleanup();
  });

  it('says there are no pipelines, and why: an empty folder (exit 0) or a missing one (exit 1)', async () => {
    mkdirSync(path.join(temp.dir, 'empty-pipelines'));
    const configWith = (name: string, dir: string) =>
      temp.write(name, `dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${dir}\n`);
    const empty = await cli(['status'], {
      INGEST_CONFIG: configWith('empty.yaml', `${temp.dir}/empty-pipelines`),
    });
    expect(empty).toMatchObject({
      code: 0,
      stdout: `no pipelines: ${temp.dir}/empty-pipelines has no *.yaml pipeline\n`,
    });
    const missing = await cli(['status'], {
      INGEST_CONFIG: configWith('missing.yaml', `${temp.dir}/missing-pipelines`),
    });
    expect(missing).toMatchObject({
      code: 1,
      stdout: `no pipelines: ${temp.dir}/missing-pipelines does not exist\n`,
    });
  });

  it('prints inputs per state and the last failures with their reasons, newest first', async () => {
    const { code, stdout } = await cli(['status', '--pipeline', 'demo-drop'], env);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe(`demo-drop (local:${drop}): 4 input(s)`);
    expect(lines[1]).toBe(
      '  received 0  publishing 0  published 0  receipted 1  failed 1  retry-scheduled 1  dead 1',
    );
    expect(lines[2]).toBe('  last failures, newest first:');
    expect(lines[3]).toMatch(
      /^ {4}2098-01-01T00:00:00.000Z {2}retry-scheduled +aaaa\.csv {2}\(attempts 2, next try 2099-01-01T00:00:00.000Z\)$/,
    );
    expect(lines[4]).toBe('      Channel closed by server');
    expect(lines[5]).toMatch(/^ {4}\d{4}-\S+ {2}failed +failed\/bad\.csv {2}\(attempts 1\)$/);
    expect(lines[6]).toMatch(/^ {6}Missing column\(s\)/);
    expect(lines[7]).toMatch(/dead +bbbb\.csv {2}\(attempts 5\)$/);
  });

  it('says what --failures needs for a negative or fractional count, not that it is ambiguous', async () => {
    const runs = ['-5', '1.5'].map((value) => cli(['status', '--failures', value], env));
    for (const { code, stderr } of await Promise.all(runs)) {
      expect(code).toBe(2);
      expect(stderr).toMatch(/--failures must be a whole number, 0 or more/);
      expect(stderr).not.toMatch(/ambiguous/);
    }
  });

  it('gives the same report as JSON, limited by --failures', async () => {
    const { code, stdout } = await cli(
      ['status', '--pipeline', 'demo-drop', '--json', '--failures', '1'],
      env,
    );
    expect(code).toBe(0);
    const [report] = JSON.parse(stdout) as PipelineStatus[];
    expect(report).toMatchObject({
      pipeline: 'demo-drop',
      inputs: 4,
      byStatus: { receipted: 1, failed: 1, 'retry-scheduled': 1, dead: 1, received: 0 },
    });
    expect(report!.lastFailures).toEqual([
      expect.objectContaining({
        status: 'retry-scheduled',
        attempts: 2,
        lastError: 'Channel closed by server',
      }),
    ]);
  });

  it('reports every pipeline, and exits 1 when a drop cannot be read', async () => {
    const { code, stdout } = await cli(['status'], env);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^broken-drop \(local:.*not-a-folder\): cannot read the drop: /m);
    expect(stdout).toMatch(/^demo-drop \(local:.*\): 4 input\(s\)$/m);
  });

  it('says which pipelines exist when asked for an unknown one (exit 2)', async () => {
    const { code, stderr } = await cli(['status', '--pipeline', 'nope'], env);
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(
      'warehouse-ingest: no pipeline named "nope" (there are: broken-drop, demo-drop); see "warehouse-ingest help status"',
    );
  });

  it('names the broker node the running service on this host publishes through, or why it cannot', async () => {
    const noService = await cli(['status', '--pipeline', 'demo-drop'], { ...env, ADMIN_PORT: '1' });
    expect(noService.stdout).toMatch(
      /\nbroker: node unknown \(no service answered at http:\/\/127\.0\.0\.1:1\/readyz: .+\)\n$/,
    );
    mkdirSync(path.join(temp.dir, 'no-pipelines'), { recursive: true });
    const serviceConfig = temp.write(
      'service.yaml',
      `dataDirectory: ${temp.dir}/service-data\npipelinesDirectory: ${temp.dir}/no-pipelines\nbroker:\n  exchange: ${topology.exchange}\n  queues: [{ name: ${topology.queue}, bindingKeys: ["#"] }]\n${await demoTenantYaml()}`,
    );
    const service = await startService({
      env: {
        AMQP_URL,
        INGEST_CONFIG: serviceConfig,
        INGEST_ENV: 'development',
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
      },
      log: createLogger({ level: 'silent' }),
    });
    try {
      await vi.waitFor(
        async () => {
          const ready = await fetch(`${service.adminUrl}/readyz`);
          expect(ready.status, await ready.text()).toBe(200);
        },
        { timeout: 15_000, interval: 100 },
      );
      const adminPort = new URL(service.adminUrl).port;
      const { code, stdout } = await cli(['status', '--pipeline', 'demo-drop'], {
        ...env,
        ADMIN_PORT: adminPort,
      });
      expect(code).toBe(0);
      expect(stdout).toContain(
        `\nbroker: the service publishes through node ${nodeAddress(AMQP_URL)}\n`,
      );
      expect(stdout).not.toContain('guest');
    } finally {
      await service.stop();
    }
  });
});
