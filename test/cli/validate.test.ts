import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { validateFile } from '../../src/cli/validate.js';
import { KIND_NAMES, KINDS } from '../../src/records/index.js';
import { FIXTURES, invalidFixtures } from '../records/fixtures.js';
import { runCli } from '../support/cli-process.js';
import { tempFolder } from '../support/temp.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const folder = tempFolder('cli-validate-');
const profile = (kind: string, file = 'profile.json') =>
  JSON.parse(readFileSync(new URL(`${kind}/v1/${file}`, FIXTURES), 'utf8')) as Record<
    string,
    unknown
  >;
const profiles = Object.fromEntries(KIND_NAMES.map((kind) => [kind, profile(kind)]));
const tenants = [{ businessId: 'ACME', apiKeyHash: await hashApiKey('acme-cli-test-key-0123') }];
const config = folder.write(
  'config.yaml',
  stringify({ dataDirectory: `${folder.dir}/data`, tenants, onboarding: { ACME: profiles } }),
);

/** JSON as a client sends it: `1e999` (Infinity after parsing) survives, where JSON.stringify writes null. */
const wireJson = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) => (v === Infinity ? '\u0000inf' : v)).replaceAll(
    '"\\u0000inf"',
    '1e999',
  );

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCli(args, {
    env: { INGEST_ENV: 'development', INGEST_CONFIG: config, ...env },
    timeoutMs: 20_000,
  });

describe('validateFile: the errors of the API and the receipts, offline', () => {
  it('refuses a record whose routing key AMQP cannot carry when given the routing template, as the service does', async () => {
    const [record] = JSON.parse(
      readFileSync(new URL('sales-orders/valid.json', FIXTURES), 'utf8'),
    ) as Array<{ identifiers: { site: string } }>;
    record!.identifiers.site = 'S'.repeat(300);
    const file = folder.write('long-site.json', JSON.stringify([record]));
    const options = {
      file,
      kind: KINDS['sales-orders'],
      format: 'v2-json' as const,
      businessId: 'ACME',
      onboarding: {},
    };
    expect((await validateFile(options)).ok).toBe(true); // without the template nothing is routed
    const verdict = await validateFile({
      ...options,
      routingKey: '{kind}.{businessId}.{identifiers.site}',
    });
    expect(!verdict.ok && verdict.problem.errors).toEqual([
      { index: 0, errors: [expect.stringMatching(/^identifiers\.site: Too long to route: /)] },
    ]);
  });

  describe.each(KIND_NAMES)('%s', (kind) => {
    it.each(invalidFixtures(kind).map((f) => [f.file, f] as const))(
      'v2 %s gives the golden errors',
      async (_name, fixture) => {
        const file = folder.write(`${kind}-${fixture.file}`, wireJson(fixture.batch));
        const verdict = await validateFile({
          file,
          kind: KINDS[kind],
          format: 'v2-json',
          businessId: 'ACME',
          onboarding: {},
        });
        expect(verdict.ok).toBe(false);
        expect(!verdict.ok && verdict.problem.errors).toEqual(fixture.errors);
      },
    );

    const invalid = new URL(`${kind}/v1/invalid/`, FIXTURES);
    const inputs = readdirSync(invalid).filter(
      (f) => /\.(json|csv)$/.test(f) && !/\.(expected|profile)\.json$/.test(f),
    );
    it.each(inputs)(
      'v1 %s gives the golden errors (legacy path, or CSV line and column)',
      async (input) => {
        const own = input.replace(/\.(json|csv)$/, '.profile.json');
        const kindProfile = existsSync(new URL(own, invalid))
          ? profile(kind, `invalid/${own}`)
          : profiles[kind];
        const verdict = await validateFile({
          file: new URL(input, invalid).pathname,
          kind: KINDS[kind],
          format: input.endsWith('.csv') ? 'v1-csv' : 'v1-json',
          businessId: 'ACME',
          onboarding: { ACME: { [kind]: kindProfile } },
        });
        const expected = JSON.parse(
          readFileSync(new URL(input.replace(/\.(json|csv)$/, '.expected.json'), invalid), 'utf8'),
        );
        expect(!verdict.ok && verdict.problem.errors).toEqual(expected);
      },
    );

    it.each(['valid.json', 'valid.csv'])('v1 %s is valid', async (input) => {
      const verdict = await validateFile({
        file: new URL(`${kind}/v1/${input}`, FIXTURES).pathname,
        kind: KINDS[kind],
        format: input.endsWith('.csv') ? 'v1-csv' : 'v1-json',
        onboarding: { ACME: profiles },
      });
      expect(verdict).toMatchObject({ ok: true, businessId: 'ACME' });
    });
  });
});

describe('warehouse-ingest validate (a real process)', () => {
  it('exits 0 for a valid file, naming the business taken from the first record, with no broker reachable', async () => {
    const { code, stdout, stderr } = await cli(
      [
        'validate',
        'fixtures/sales-orders/valid.json',
        '--kind',
        'sales-orders',
        '--format',
        'v2-json',
      ],
      { AMQP_URL: 'amqp://127.0.0.1:1' },
    );
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toBe(
      'fixtures/sales-orders/valid.json: valid — 3 sales-orders record(s) for ACME\n',
    );
  });

  it("exits 1 for an invalid CSV, printing the receipt's problem details with --json, and line and column in lines without", async () => {
    const input = 'fixtures/sales-orders/v1/invalid/bad-number.csv';
    const expected = JSON.parse(
      readFileSync(`${ROOT}fixtures/sales-orders/v1/invalid/bad-number.expected.json`, 'utf8'),
    ) as Array<{ index: number; errors: string[] }>;
    const json = await cli([
      'validate',
      input,
      '--kind',
      'sales-orders',
      '--format',
      'v1-csv',
      '--business',
      'ACME',
      '--json',
    ]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      type: '/problems/validation-failed',
      status: 400,
      instance: 'bad-number.csv',
      errors: expected,
    });
    const lines = await cli([
      'validate',
      input,
      '--kind',
      'sales-orders',
      '--format',
      'v1-csv',
      '--business',
      'ACME',
    ]);
    expect(lines.code).toBe(1);
    expect(lines.stdout.split('\n').slice(1, -1)).toEqual(
      expected.flatMap((e) => e.errors.map((m) => `  record ${e.index}: ${m}`)),
    );
    expect(lines.stdout).toMatch(/line \d+, column /);
  });

  it('exits 1 for a body the API refuses as a whole (not JSON)', async () => {
    const file = folder.write('broken.json', '[{"identifiers": ');
    const { code, stdout } = await cli([
      'validate',
      file,
      '--kind',
      'sales-orders',
      '--format',
      'v2-json',
      '--business',
      'ACME',
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/: invalid — .*JSON/);
  });

  it('exits 2 with one line and no stack trace for usage errors and unreadable files', async () => {
    for (const args of [
      ['validate', 'fixtures/sales-orders/valid.json', '--kind', 'sales-orders'],
      ['validate', 'fixtures/sales-orders/valid.json', '--kind', 'orders', '--format', 'v2-json'],
      [
        'validate',
        'fixtures/sales-orders/valid.json',
        '--kind',
        'sales-orders',
        '--format',
        'v2-json',
        '--colour',
      ],
      ['validate', 'no-such-file.json', '--kind', 'sales-orders', '--format', 'v2-json'],
    ]) {
      const { code, stdout, stderr } = await cli(args);
      expect({ args, code, stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(stderr).toMatch(/^warehouse-ingest: [^\n]+\n$/);
    }
  });
});

describe('warehouse-ingest help', () => {
  it('prints the same help for "help validate" and "validate --help", and the overview lists every command', async () => {
    const [a, b, overview] = await Promise.all([
      cli(['help', 'validate']),
      cli(['validate', '--help']),
      cli(['help']),
    ]);
    expect(a).toEqual({
      code: 0,
      stdout: expect.stringContaining('Usage: warehouse-ingest validate <file> --kind'),
      stderr: '',
    });
    expect(b.stdout).toBe(a.stdout);
    for (const command of ['serve', 'run', 'validate', 'lint', 'hash-key', 'help'])
      expect(overview.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it('prints help\'s own page for "help --help" and "help -h", exit 0', async () => {
    const [own, long, short] = await Promise.all([
      cli(['help', 'help']),
      cli(['help', '--help']),
      cli(['help', '-h']),
    ]);
    expect(own).toEqual({
      code: 0,
      stdout: expect.stringContaining('Usage: warehouse-ingest help [command]'),
      stderr: '',
    });
    expect(long).toEqual(own);
    expect(short).toEqual(own);
  });

  it('answers help for an unknown command with exit 2', async () => {
    const { code, stderr } = await cli(['help', 'frobnicate']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'warehouse-ingest: unknown command "frobnicate"; see "warehouse-ingest help"\n',
    );
  });
});

describe('warehouse-ingest lint', () => {
  const pipelines = `${folder.dir}/pipelines`;
  mkdirSync(pipelines, { recursive: true });
  const withPipelines = folder.write(
    'lint.yaml',
    stringify({ dataDirectory: `${folder.dir}/data`, pipelinesDirectory: pipelines }),
  );
  const pipeline = (name: string, extra: Record<string, unknown>) =>
    folder.write(
      `pipelines/${name}.yaml`,
      stringify({
        name,
        businessId: 'DEMO',
        kind: 'sales-orders',
        format: 'v1-csv',
        source: { type: 'local', path: `${folder.dir}/drop` },
        ...extra,
      }),
    );

  it('exits 0 naming every pipeline when configuration and pipelines are valid', async () => {
    mkdirSync(`${folder.dir}/drop`, { recursive: true });
    pipeline('demo-orders', {});
    const { code, stdout, stderr } = await cli(['lint'], { INGEST_CONFIG: withPipelines });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('configuration valid (environment development');
    expect(stdout).toContain(
      `1 pipeline(s) valid in ${pipelines}\n  demo-orders (local, sales-orders, v1-csv) ${pipelines}/demo-orders.yaml`,
    );
  });

  it('exits 1 saying so when pipelinesDirectory does not exist, never "0 pipeline(s) valid"', async () => {
    const missing = `${folder.dir}/no-such-pipelines`;
    const { code, stdout, stderr } = await cli(['lint'], {
      INGEST_CONFIG: folder.write(
        'lint-missing.yaml',
        stringify({ dataDirectory: `${folder.dir}/data`, pipelinesDirectory: missing }),
      ),
    });
    expect({ code, stderr }).toEqual({
      code: 1,
      stderr: `pipelinesDirectory ${missing} does not exist\n`,
    });
    expect(stdout).not.toContain('pipeline(s) valid');
  });

  it('exits 1 when a local drop folder does not exist, or a regular file sits where a settle folder must be', async () => {
    const lintDrops = `${folder.dir}/lint-drops`;
    mkdirSync(`${lintDrops}/pipelines`, { recursive: true });
    mkdirSync(`${lintDrops}/blocked`);
    writeFileSync(`${lintDrops}/blocked/processed`, 'not a folder');
    const write = (name: string, path: string) =>
      folder.write(
        `lint-drops/pipelines/${name}.yaml`,
        stringify({
          name,
          businessId: 'DEMO',
          kind: 'sales-orders',
          format: 'v1-csv',
          source: { type: 'local', path },
        }),
      );
    const missing = write('missing-drop', `${lintDrops}/no-such-drop`);
    const blocked = write('blocked-drop', `${lintDrops}/blocked`);
    const { code, stdout, stderr } = await cli(['lint'], {
      INGEST_CONFIG: folder.write(
        'lint-drops.yaml',
        stringify({
          dataDirectory: `${folder.dir}/data`,
          pipelinesDirectory: `${lintDrops}/pipelines`,
        }),
      ),
    });
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toContain('2 problem(s):\n');
    expect(stderr).toContain(
      `${missing}: source.path: The drop folder ${lintDrops}/no-such-drop does not exist\n`,
    );
    expect(stderr).toContain(
      `${blocked}: source.path: "processed" in the drop is a regular file, but files are settled into the folder "processed"`,
    );
  });

  it('exits 1 listing every problem by file and field, as start-up would refuse them', async () => {
    const bad = pipeline('nobody-orders', { businessId: 'NOBODY', kind: 'invoices' });
    const { code, stdout, stderr } = await cli(['lint'], {
      INGEST_CONFIG: withPipelines,
      PORT: 'eighty',
    });
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toBe(
      '1 problem(s):\nenvironment variable PORT: http.port: Expected number, received string\n',
    );
    const again = await cli(['lint'], { INGEST_CONFIG: withPipelines });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${bad}: kind: `);
    expect(again.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('warehouse-ingest lint, every problem in one run', () => {
  const dir = `${folder.dir}/all-problems`;
  mkdirSync(`${dir}/pipelines`, { recursive: true });
  const sftp = (extra: Record<string, unknown>) => ({
    type: 'sftp',
    host: 'sftp.example',
    username: 'acme',
    path: 'in',
    hostKeyFingerprints: ['SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s'],
    ...extra,
  });
  const write = (name: string, source: Record<string, unknown>) =>
    folder.write(
      `all-problems/pipelines/${name}.yaml`,
      stringify({ name, businessId: 'DEMO', kind: 'sales-orders', format: 'v1-csv', source }),
    );
  const exposedKey = folder.write('all-problems/exposed-key', 'not really a key', 0o644);
  const a = write('a-env', sftp({ password: { env: 'LINT_TEST_UNSET_PASSWORD' } }));
  const b = write('b-exposed', sftp({ privateKey: { file: exposedKey } }));
  const c = write('c-s3', {
    type: 's3',
    bucket: 'b',
    region: 'eu-west-2',
    accessKeyId: { file: `${dir}/no-such-file` },
    secretAccessKey: { env: 'LINT_TEST_UNSET_S3_SECRET' },
  });
  const d = write('d-inline', sftp({ password: 'hunter2-inline' }));
  const lintConfig = folder.write(
    'all-problems/config.yaml',
    stringify({ dataDirectory: `${dir}/data`, pipelinesDirectory: `${dir}/pipelines` }),
  );

  it('reports every secret of every pipeline and what serve would refuse, each by file and field', async () => {
    const { code, stdout, stderr } = await cli(['lint'], {
      INGEST_CONFIG: lintConfig,
      // With a broker, the public demo credential is refused too.
      AMQP_URL: 'amqp://127.0.0.1:1',
    });
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toMatch(/^6 problem\(s\):\n/);
    // The AWS SDK may add a warning of its own about the Node version: only the problems count.
    const problems = stderr.split('\n').filter((line) => /^(\/|AMQP_URL)/.test(line));
    expect(problems).toHaveLength(6);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^AMQP_URL \(broker\.url\): tenants\[0\]: The public demo credential/,
        ),
        `${a}: source.password: Environment variable LINT_TEST_UNSET_PASSWORD is not set`,
        expect.stringMatching(
          new RegExp(
            `^${b}: source.privateKey: ${exposedKey} holds secrets but is readable or writable by others`,
          ),
        ),
        `${c}: source.accessKeyId: Cannot read ${dir}/no-such-file: ENOENT`,
        `${c}: source.secretAccessKey: Environment variable LINT_TEST_UNSET_S3_SECRET is not set`,
        `${d}: source.password: A secret must not be written in the pipeline file: reference it by environment variable ({ env: NAME }) or by file ({ file: /path/to/secret }, chmod 600), and remove the value from the file (and its history)`,
      ]),
    );
    expect(stderr).not.toContain('hunter2');
  });
});

describe('lint: webhook secrets', () => {
  it('resolves every webhook secret and names tenant and endpoint of a missing or malformed one, never the value', async () => {
    const malformed = 'whsec_not-base64-at-all!';
    const secretFile = folder.write('acme-webhook', malformed);
    const withWebhooks = folder.write(
      'lint-webhooks.yaml',
      stringify({
        dataDirectory: `${folder.dir}/data`,
        pipelinesDirectory: `${folder.dir}/no-pipelines-here`,
        tenants: [
          {
            ...tenants[0],
            webhooks: [
              { url: 'http://127.0.0.1:9000/a', secret: { env: 'LINT_MISSING_SECRET' } },
              { url: 'http://hooks.acme.example/b', secret: { file: secretFile } },
            ],
          },
        ],
      }),
    );
    mkdirSync(`${folder.dir}/no-pipelines-here`, { recursive: true });
    const { code, stdout, stderr } = await cli(['lint'], { INGEST_CONFIG: withWebhooks });
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toBe(
      [
        '2 problem(s):',
        'environment variable LINT_MISSING_SECRET: tenants[0].webhooks[0].secret: Not set (tenant ACME, endpoint 127.0.0.1:9000)',
        `${secretFile}: tenants[0].webhooks[1].secret: Expected whsec_ followed by base64 (at least 24 bytes) (tenant ACME, endpoint hooks.acme.example)`,
        '',
      ].join('\n'),
    );
    expect(stderr).not.toContain(malformed);

    const good = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    folder.write('acme-webhook', good);
    const fixed = await cli(['lint'], { INGEST_CONFIG: withWebhooks, LINT_MISSING_SECRET: good });
    expect({ code: fixed.code, stderr: fixed.stderr }).toEqual({ code: 0, stderr: '' });
  });
});
