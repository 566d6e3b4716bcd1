import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_VARIABLES, loadConfig, PACKAGE_CONFIG_DIRECTORY } from '../../src/config.js';
import { loadPipelineFiles } from '../../src/drops/definition.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder();
const HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';

describe('loadConfig', () => {
  it('runs on the embedded defaults alone: development, demo tenant, no broker', () => {
    const config = loadConfig({ env: {} });
    expect(config.environment).toBe('development');
    expect(config.broker.url).toBeUndefined();
    expect(config.tenants.map((t) => t.businessId)).toEqual(['DEMO']);
    expect(config.http.port).toBe(3000);
    expect(Object.isFrozen(config.http)).toBe(true);
  });

  it('publishes the full message format unless broker.messageFormat says lean', () => {
    expect(loadConfig({ env: {} }).broker.messageFormat).toBe('full');
    expect(
      loadConfig({ env: { INGEST_BROKER__MESSAGE_FORMAT: 'lean' } }).broker.messageFormat,
    ).toBe('lean');
    const problems = problemsOf(() =>
      loadConfig({ env: { INGEST_BROKER__MESSAGE_FORMAT: 'bare' } }),
    );
    expect(problems[0]).toMatchObject({ field: 'broker.messageFormat' });
  });

  it('listens on loopback in development, on every interface in production and sandbox, unless HOST says otherwise', () => {
    expect(loadConfig({ env: {} }).http.host).toBe('127.0.0.1');
    expect(loadConfig({ env: { INGEST_ENV: 'production', AMQP_URL: 'amqp://mq' } }).http.host).toBe(
      '0.0.0.0',
    );
    expect(loadConfig({ env: { INGEST_ENV: 'sandbox' } }).http.host).toBe('0.0.0.0');
    expect(loadConfig({ env: { HOST: '0.0.0.0' } }).http.host).toBe('0.0.0.0');
  });

  it("resolves pipelinesDirectory whatever the working directory: the default is the package's pipelines/", () => {
    const packageRoot = path.dirname(path.resolve(PACKAGE_CONFIG_DIRECTORY));
    const before = process.cwd();
    try {
      process.chdir(temp.dir);
      expect(loadConfig({ env: {} }).pipelinesDirectory).toBe(path.join(packageRoot, 'pipelines'));
      const file = temp.write('relative.yaml', 'pipelinesDirectory: partners\n');
      expect(loadConfig({ env: { INGEST_CONFIG: file } }).pipelinesDirectory).toBe(
        path.join(temp.dir, 'partners'),
      );
    } finally {
      process.chdir(before);
    }
  });

  it('reads LOG_FORMAT (json or pretty)', () => {
    expect(loadConfig({ env: {} }).log.format).toBe('json');
    expect(loadConfig({ env: { LOG_FORMAT: 'pretty' } }).log.format).toBe('pretty');
    expect(() => loadConfig({ env: { LOG_FORMAT: 'fancy' } })).toThrow('log.format');
  });

  it('applies the operator environment variables over the files', () => {
    const config = loadConfig({
      env: {
        PORT: '8081',
        HOST: '127.0.0.1',
        AMQP_URL: 'amqp://u:p@mq:5672',
        INGEST_ENV: 'sandbox',
      },
    });
    expect(config.http).toMatchObject({ port: 8081, host: '127.0.0.1' });
    expect(config.broker.url).toEqual(['amqp://u:p@mq:5672']);
    expect(config.environment).toBe('sandbox');
    expect(config.tenants).toEqual([]);
  });

  it('merges $INGEST_CONFIG over the defaults, objects key by key and arrays whole', () => {
    const file = temp.write(
      'merge.yaml',
      `http:\n  bodyLimitBytes: 2048\ntenants:\n  - businessId: ACME\n    apiKeyHash: "${HASH}"\n`,
    );
    const config = loadConfig({ env: { INGEST_CONFIG: file } });
    expect(config.http.bodyLimitBytes).toBe(2048);
    expect(config.http.port).toBe(3000);
    expect(config.tenants.map((t) => t.businessId)).toEqual(['ACME']);
  });

  it('names the file and the field of every problem', () => {
    const file = temp.write(
      'bad.yaml',
      `http:\n  port: "eighty"\ntenants:\n  - businessId: ACME\n    apiKeyHash: plain-text-key\n  - {}\n`,
    );
    const problems = problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }));
    expect(problems).toEqual([
      { file, field: 'http.port', message: expect.stringMatching(/expected number/i) },
      {
        file,
        field: 'tenants[0].apiKeyHash',
        message: "Expected a scrypt hash printed by 'warehouse-ingest hash-key'",
      },
      { file, field: 'tenants[1].businessId', message: expect.any(String) },
      { file, field: 'tenants[1].apiKeyHash', message: expect.any(String) },
    ]);
  });

  it('refuses a key hash cut short or altered, which would load and then answer 401 forever', () => {
    for (const broken of [HASH.slice(0, -2), HASH.slice(0, -4), HASH.replace('ln=15', 'ln=30')]) {
      const file = temp.write(
        'cut.yaml',
        `tenants:\n  - businessId: ACME\n    apiKeyHash: "${broken}"\n`,
      );
      expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }))).toEqual([
        {
          file,
          field: 'tenants[0].apiKeyHash',
          message: expect.stringContaining('Not a whole scrypt hash'),
        },
      ]);
    }
  });

  it('takes a cluster as several broker URLs: comma-separated in AMQP_URL (and its _FILE), or a list', () => {
    const nodes = [
      'amqp://a:one@rabbit-1:5672/prod',
      'amqp://b:two,still-the-password@rabbit-2:5672/prod',
      'amqps://c:three@rabbit-3:5671/prod',
    ];
    expect(loadConfig({ env: { AMQP_URL: nodes.join(',') } }).broker.url).toEqual(nodes);
    expect(loadConfig({ env: { AMQP_URL: nodes.join(', ') } }).broker.url).toEqual(nodes);
    const file = temp.write('amqp-urls', `${nodes.join(',')}\n`);
    expect(loadConfig({ env: { AMQP_URL_FILE: file } }).broker.url).toEqual(nodes);
    const yaml = temp.write(
      'cluster.yaml',
      `broker:\n  url:\n${nodes.map((url) => `    - "${url}"`).join('\n')}\n`,
    );
    expect(loadConfig({ env: { INGEST_CONFIG: yaml } }).broker.url).toEqual(nodes);
  });

  it('names the node of a cluster whose URL is wrong, never printing a password', () => {
    const problems = problemsOf(() =>
      loadConfig({
        env: { AMQP_URL: 'amqp://a:one@rabbit-1:5672/prod,amqp://b:tw/o@rabbit-2:5672/prod' },
      }),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ field: 'broker.url' });
    expect(problems[0]!.message).toContain('node 2 of 2: ');
    expect(problems[0]!.message).toContain('amqp://b:****@rabbit-2:5672/prod');
    expect(JSON.stringify(problems)).not.toContain('tw/o');
    const listed = temp.write(
      'bad-list.yaml',
      'broker:\n  url: ["amqp://a@rabbit-1:5672", "http://rabbit-2"]\n',
    );
    expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: listed } }))).toEqual([
      expect.objectContaining({
        field: 'broker.url[1]',
        message: 'node 2 of 2: Expected an amqp:// or amqps:// URL',
      }),
    ]);
  });

  it('refuses a broker URL whose password holds an unencoded reserved character, never printing the password', () => {
    for (const [password, reserved] of [
      ['s3cr/et', '/'],
      ['s3cr?et', '?'],
      ['s3cr#et', '#'],
    ] as const) {
      const problems = problemsOf(() =>
        loadConfig({ env: { AMQP_URL: `amqp://ingest:${password}@mq.example:5672/prod` } }),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatchObject({ field: 'broker.url' });
      expect(problems[0]!.message).toContain(`unencoded "${reserved}"`);
      expect(problems[0]!.message).toContain('percent-encode');
      expect(problems[0]!.message).toContain('amqp://ingest:****@mq.example:5672/prod');
      expect(JSON.stringify(problems)).not.toContain('s3cr');
    }
    // Encoded, the same password is fine.
    const config = loadConfig({
      env: { AMQP_URL: 'amqp://ingest:s3cr%2Fet@mq.example:5672/prod' },
    });
    expect(config.broker.url).toEqual(['amqp://ingest:s3cr%2Fet@mq.example:5672/prod']);
  });

  it('reports an exposed secrets file together with every other problem, in one run', () => {
    const file = temp.write(
      'exposed.yaml',
      `http:\n  port: eighty\ntenants:\n  - { businessId: ACME, apiKeyHash: "${HASH}" }\n`,
      0o644,
    );
    const problems = problemsOf(() =>
      loadConfig({ env: { INGEST_CONFIG: file, LOG_LEVEL: 'loud' } }),
    );
    expect(problems.map(({ file, field }) => `${file}: ${field}`)).toEqual([
      `${file}: (file)`,
      `${file}: http.port`,
      expect.stringMatching(/log\.level$/),
    ]);
    expect(problems[0]!.message).toContain(`run chmod 600 ${file}`);
  });

  it('reports a NUL byte in a value once, naming the file and the field, not the schema errors it causes', () => {
    const file = temp.write(
      'nul.yaml',
      'dataDirectory: /srv/da\u0000ta\nlog:\n  level: "info\\0"\n',
    );
    const problems = problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }));
    expect(problems).toEqual([
      { file, field: 'dataDirectory', message: expect.stringContaining('NUL byte') },
      { file, field: 'log.level', message: expect.stringContaining('NUL byte') },
    ]);
    const pipeline = temp.write(
      'nul-pipeline.yaml',
      'name: nul\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: "/srv/drop\\0" }\n',
    );
    expect(problemsOf(() => loadPipelineFiles([pipeline]))).toEqual([
      { file: pipeline, field: 'source.path', message: expect.stringContaining('NUL byte') },
    ]);
  });

  it("has a shutdown grace time that fits Kubernetes' 30 s, and checks one that is set", () => {
    expect(loadConfig({ env: {} }).shutdown.graceMs).toBe(25_000);
    expect(
      loadConfig({
        env: { INGEST_CONFIG: temp.write('grace.yaml', 'shutdown:\n  graceMs: 5000\n') },
      }).shutdown.graceMs,
    ).toBe(5000);
    const file = temp.write('bad-grace.yaml', 'shutdown:\n  graceMs: -1\n  grace: 3\n');
    expect(
      problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } })).map(
        (p) => `${p.file}: ${p.field}`,
      ),
    ).toEqual([`${file}: shutdown.graceMs`, `${file}: shutdown.grace`]);
  });

  it('rejects unknown keys, so a typo does not silently fall back to a default', () => {
    const file = temp.write('typo.yaml', `http:\n  bodyLimit: 5\n`);
    const problems = problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }));
    expect(problems).toEqual([
      { file, field: 'http.bodyLimit', message: 'Unknown setting (misspelt?)' },
    ]);
  });

  it('says what replaced a setting that was replaced (the per-address login ceiling now counts business ids)', () => {
    const file = temp.write(
      'replaced.yaml',
      'http:\n  abuse:\n    authThrottle:\n      maxFailuresPerAddress: 200\n',
    );
    expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }))).toEqual([
      {
        file,
        field: 'http.abuse.authThrottle.maxFailuresPerAddress',
        message: expect.stringMatching(/^Replaced by maxBusinessIdsPerAddress: /),
      },
    ]);
  });

  it('names the environment variable when one is wrong', () => {
    const problems = problemsOf(() => loadConfig({ env: { PORT: 'abc' } }));
    expect(problems).toEqual([
      { file: 'environment variable PORT', field: 'http.port', message: expect.any(String) },
    ]);
  });

  it('requires a broker in production and refuses duplicate tenants', () => {
    const file = temp.write(
      'prod.yaml',
      `tenants:\n  - { businessId: ACME, apiKeyHash: "${HASH}" }\n  - { businessId: ACME, apiKeyHash: "${HASH}" }\n`,
    );
    const problems = problemsOf(() =>
      loadConfig({ env: { INGEST_CONFIG: file, INGEST_ENV: 'production' } }),
    );
    expect(problems).toEqual([
      { file, field: 'tenants[1].businessId', message: 'Duplicate business id "ACME"' },
      { file: 'environment', field: 'broker.url', message: expect.stringContaining('AMQP_URL') },
    ]);
  });

  it('does not carry the development demo tenant into production', () => {
    const config = loadConfig({ env: { INGEST_ENV: 'production', AMQP_URL: 'amqp://127.0.0.1' } });
    expect(config.tenants).toEqual([]);
  });

  it('reports an unreadable or non-mapping file by name', () => {
    const missing = `${temp.dir}/nope.yaml`;
    expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: missing } }))).toEqual([
      { file: missing, field: '(file)', message: 'file not found' },
    ]);
    const list = temp.write('list.yaml', '- a\n- b\n');
    expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: list } }))[0]).toMatchObject({
      file: list,
      field: '(file)',
    });
  });

  it('finds the packaged defaults folder', () => {
    expect(PACKAGE_CONFIG_DIRECTORY).toMatch(/config\/$/);
  });
});

describe('ENVIRONMENT_VARIABLES', () => {
  // The table docs/configuration.md is generated from must say what the loader does.
  const values: Record<keyof typeof ENVIRONMENT_VARIABLES, string> = {
    INGEST_ENV: 'sandbox',
    HOST: '127.0.0.9',
    PORT: '8123',
    ADMIN_HOST: '127.0.0.8',
    ADMIN_PORT: '9123',
    AMQP_URL: 'amqp://mq.example:5672',
    REDIS_URL: 'redis://redis.example:6379/2',
    REDIS_SENTINELS: 'sentinel-1:26379,[::1]:26380',
    REDIS_SENTINEL_MASTER: 'ingest',
    REDIS_USERNAME: 'ingest-user',
    REDIS_DB: '3',
    HISTORY_URL: 'postgres://ingest@db.example:5432/history',
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'pretty',
  };
  // Sentinels and the master's name are only valid together.
  const alongside: Partial<Record<keyof typeof values, Record<string, string>>> = {
    REDIS_SENTINELS: { REDIS_SENTINEL_MASTER: 'ingest' },
    REDIS_SENTINEL_MASTER: { REDIS_SENTINELS: 'sentinel-1:26379' },
    // The ACL user and the database number are set apart from a URL only behind Sentinel.
    REDIS_USERNAME: { REDIS_SENTINELS: 'sentinel-1:26379', REDIS_SENTINEL_MASTER: 'ingest' },
    REDIS_DB: { REDIS_SENTINELS: 'sentinel-1:26379', REDIS_SENTINEL_MASTER: 'ingest' },
  };
  it.each(Object.entries(ENVIRONMENT_VARIABLES))('%s sets %s', (name, field) => {
    const key = name as keyof typeof values;
    const config = loadConfig({ env: { [name]: values[key], ...alongside[key] } });
    const value = field.split('.').reduce<unknown>((at, key) => (at as never)[key], config);
    expect(String(value)).toBe(values[name as keyof typeof values]);
  });
});
