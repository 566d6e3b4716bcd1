import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { createProgress } from '../../src/cli/progress.js';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { cliEntry, ROOT } from '../support/cli-entry.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv, PROFILE } from '../drops/stores/drop-contract.js';

const exec = promisify(execFile);
/** A well-formed key hash (the development tenant's): ACME sends files, never requests, here. */
const KEY_HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';
/** ACME's sales-orders onboarding profile: what its v1 files cannot carry. Without it they are rejected. */
const ACME_PROFILE = stringifyYaml({ onboarding: { ACME: { 'sales-orders': PROFILE } } });

/** The CLI as a separate process, as an operator (or cron) runs it; stdout and stderr are pipes, not a terminal. */
async function cli(args: string[], env: NodeJS.ProcessEnv) {
  return exec(process.execPath, [cliEntry(), ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

let topology: TestTopology;
beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
});
afterAll(() => topology.cleanup());

let n = 0;
/** A drop of ACME's, its pipeline in a pipelines folder, and a config without (or with) ACME's profile. */
function setUp(pipelineExtra = '') {
  const temp = tempFolder('reprocess-cli-');
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  mkdirSync(path.join(temp.dir, 'pipelines'));
  const name = `acme-${process.pid}-${++n}`;
  const pipeline = temp.write(
    'pipelines/acme.yaml',
    `name: ${name}\nbusinessId: ACME\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: ${drop} }\nreadiness: { strategy: rename }\n${pipelineExtra}`,
  );
  const base = `dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${temp.dir}/pipelines\nbroker:\n  exchange: ${topology.exchange}\n  queues: []\ntenants: [{ businessId: ACME, apiKeyHash: "${KEY_HASH}" }]\n`;
  const config = temp.write('config.yaml', base);
  const env = { INGEST_CONFIG: config, INGEST_ENV: 'development', AMQP_URL };
  return {
    name,
    drop,
    env,
    put: (file: string, content: string) => writeFileSync(path.join(drop, file), content),
    runOnce: () => cli(['run', pipeline, '--once'], env),
    reprocess: (...args: string[]) => cli(['reprocess', '--pipeline', name, ...args], env),
    fixMasterData: () => temp.write('config.yaml', base + ACME_PROFILE),
    dataDirectory: path.join(temp.dir, 'data'),
    read: (file: string) => JSON.parse(readFileSync(path.join(drop, file), 'utf8')),
    list: (folder: string) => readdirSync(path.join(drop, folder)).sort(),
    /** Every file of the drop with its size and modification time: what "changes nothing" compares. */
    snapshot: () =>
      readdirSync(drop, { recursive: true, encoding: 'utf8' })
        .sort()
        .map((f) => [f, statSync(path.join(drop, f)).mtimeMs, statSync(path.join(drop, f)).size]),
  };
}

describe('warehouse-ingest reprocess', () => {
  it('accepts a file rejected for missing master data once it is fixed: a new receipt with attempt 2, the first one kept; --dry-run changes nothing', async () => {
    const t = setUp();
    const orderTag = `REPRO-${Date.now()}`;
    t.put('orders.csv', ordersCsv(orderTag, 2));
    expect((await t.runOnce()).code).toBe(0);
    const first = t.read('failed/orders.csv.receipt.json');
    expect(first).toMatchObject({ outcome: 'rejected', attempt: 1 });
    expect(JSON.stringify(first.response)).toContain('identifiers.site: Required');

    const before = t.snapshot();
    const dry = await t.reprocess('--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout.split('\n')[0]).toBe(`1 input(s) of ${t.name} would be reprocessed:`);
    expect(dry.stdout.split('\n')[1]).toBe(
      'orders.csv\tfailed\tattempts 1\tfailed/orders.csv\t2 of 2 record(s) failed validation; no record was accepted.',
    );
    expect(t.snapshot()).toEqual(before);
    expect(await topology.count()).toBe(0);

    t.fixMasterData();
    const run = await t.reprocess();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      `orders.csv → accepted (attempt 2)\nreprocessed 1 input(s) of ${t.name}: 1 accepted\n`,
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: plain lines when not on a terminal (no CR, no escape)
    expect(run.stdout + run.stderr).not.toMatch(/[\r\u001b]/);
    expect(t.read('processed/orders.csv.receipt.json')).toMatchObject({
      outcome: 'accepted',
      attempt: 2,
      file: { name: 'orders.csv' },
    });
    expect(t.read('failed/orders.csv.receipt.json')).toEqual(first);
    expect(t.list('failed')).toEqual(['orders.csv.receipt.json']);
    expect(await topology.count()).toBe(2);
    await topology.messages();

    const again = await t.reprocess();
    expect(again).toMatchObject({ code: 0, stdout: `nothing to reprocess in ${t.name}\n` });

    // Both ends reached the history (on by default, embedded) through the one end of every
    // batch: run --once's rejection and reprocess's acceptance, its records under it.
    const history = createEmbeddedHistory({ directory: path.join(t.dataDirectory, 'history') });
    try {
      await history.open();
      const page = await history.listBatches({ businessId: 'ACME' }, {}, { limit: 10 });
      expect(page.items.map((batch) => [batch.outcome, batch.source, batch.recordCount])).toEqual([
        ['accepted', { pipeline: t.name, fileName: 'orders.csv' }, 2],
        ['rejected', { pipeline: t.name, fileName: 'orders.csv' }, 0],
      ]);
      const records = await history.records({ businessId: 'ACME' }, `${orderTag}-0`);
      expect(records.map((record) => record.batch.outcome)).toEqual(['accepted']);
    } finally {
      await history.close();
    }
  });

  it('--since leaves older failures alone; an input whose file is gone is reported and skipped', async () => {
    const t = setUp();
    t.put('old.csv', ordersCsv(`OLD-${Date.now()}`, 1));
    await t.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const since = new Date().toISOString();
    t.put('new.csv', ordersCsv(`NEW-${Date.now()}`, 1));
    await t.runOnce();
    expect(t.list('failed')).toEqual([
      'new.csv',
      'new.csv.receipt.json',
      'old.csv',
      'old.csv.receipt.json',
    ]);

    const dry = await t.reprocess('--dry-run', '--since', since);
    expect(
      dry.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split('\t')[0]),
    ).toEqual(['new.csv']);
    expect((await t.reprocess('--dry-run', '--since', '1d')).stdout).toMatch(/^2 input\(s\)/);

    t.fixMasterData();
    const run = await t.reprocess('--since', since);
    expect(run).toMatchObject({
      code: 0,
      stdout: `new.csv → accepted (attempt 2)\nreprocessed 1 input(s) of ${t.name}: 1 accepted\n`,
    });
    expect(t.list('failed')).toEqual(['new.csv.receipt.json', 'old.csv', 'old.csv.receipt.json']);

    rmSync(path.join(t.drop, 'failed', 'old.csv')); // an operator deleted it
    const gone = await t.reprocess();
    expect(gone).toMatchObject({
      code: 0,
      stdout: `old.csv → missing (failed/old.csv is no longer in the drop)\nreprocessed 1 input(s) of ${t.name}: 1 missing\n`,
    });
    expect(await topology.count()).toBe(1);
    await topology.messages();
  });

  it('a poison file goes dead after retry.maxAttempts and is then never selected', async () => {
    const t = setUp('retry: { maxAttempts: 2 }\n');
    t.put('poison.csv', 'not,a,legacy,file\n1,2,3,4\n');
    await t.runOnce();
    const run = await t.reprocess();
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')[0]).toMatch(/^poison\.csv → dead \(attempt 2\): .*column/);
    expect(run.stdout.split('\n')[1]).toBe(`reprocessed 1 input(s) of ${t.name}: 1 dead`);
    const states = readdirSync(path.join(t.drop, '.warehouse-ingest', 'state')).filter((f) =>
      f.endsWith('.json'),
    );
    expect(
      JSON.parse(readFileSync(path.join(t.drop, '.warehouse-ingest', 'state', states[0]!), 'utf8')),
    ).toMatchObject({ status: 'dead', attempts: 2 });
    expect((await t.reprocess('--dry-run')).stdout).toBe(
      `0 input(s) of ${t.name} would be reprocessed\n`,
    );
    expect(await t.reprocess()).toMatchObject({
      code: 0,
      stdout: `nothing to reprocess in ${t.name}\n`,
    });
    expect(await topology.count()).toBe(0);
  });

  it('answers usage errors with one line and exit 2', async () => {
    const t = setUp();
    const cases: Array<[string[], RegExp]> = [
      [['reprocess'], /reprocess needs --pipeline <name>/],
      [
        ['reprocess', '--pipeline', t.name, '--status', 'dead'],
        /dead inputs are never reprocessed/,
      ],
      [
        ['reprocess', '--pipeline', t.name, '--status', 'failed,done'],
        /--status must be one or more of failed, retry-scheduled; got "done"/,
      ],
      [['reprocess', '--pipeline', t.name, '--since', 'yesterday'], /--since must be a duration/],
      [
        ['reprocess', '--pipeline', 'nobody'],
        new RegExp(`no pipeline named "nobody" in .*\\(pipelines: ${t.name}\\)`),
      ],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await cli(args, t.env);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(message);
    }
    const help = await cli(['help', 'reprocess'], t.env);
    expect(help.stdout).toMatch(/^Usage: warehouse-ingest reprocess --pipeline <name>/);
  });
});

describe('reprocess progress', () => {
  it('draws a bar on stderr when it is a terminal, and keeps the result lines on stdout', () => {
    const out: string[] = [];
    const err: string[] = [];
    const progress = createProgress(2, {
      out: { write: (s: string) => out.push(s) },
      err: { isTTY: true, columns: 80, write: (s: string) => err.push(s) },
    });
    progress.line('a.csv → accepted (attempt 2)');
    progress.update(1, 'a.csv');
    progress.line('b.csv → rejected (attempt 2): bad');
    progress.update(2, 'b.csv');
    progress.end();
    expect(out).toEqual(['a.csv → accepted (attempt 2)\n', 'b.csv → rejected (attempt 2): bad\n']);
    expect(err.join('')).toContain('\r\u001b[K[############------------] 1/2  a.csv');
    expect(err.join('')).toContain('[########################] 2/2  b.csv');
    expect(err.at(-1)).toBe('\r\u001b[K'); // the bar is gone at the end
  });

  it('draws nothing when stderr is not a terminal', () => {
    const err: string[] = [];
    const progress = createProgress(3, {
      out: { write: () => true },
      err: { write: (s: string) => err.push(s) },
    });
    progress.update(1, 'a.csv');
    progress.end();
    expect(err).toEqual([]);
  });
});
