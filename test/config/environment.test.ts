import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { environmentVariables, variableName } from '../../src/config/environment.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('config-env-');
const HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';

const valueAt = (config: unknown, key: string) =>
  key.split('.').reduce<unknown>((at, part) => (at as Record<string, unknown>)?.[part], config);

describe('an environment variable for every configuration key', () => {
  it('names each by the rule: INGEST_ + the path in upper snake case, parts joined by __', () => {
    expect(variableName(['http', 'abuse', 'rateLimit', 'requests'])).toBe(
      'INGEST_HTTP__ABUSE__RATE_LIMIT__REQUESTS',
    );
    const byKey = new Map(environmentVariables().map((v) => [v.key, v]));
    expect(byKey.get('http.port')).toMatchObject({
      name: 'INGEST_HTTP__PORT',
      type: 'number',
      aliases: ['PORT'],
    });
    expect(byKey.get('broker.url')).toMatchObject({ aliases: ['AMQP_URL'], secret: true });
    expect(byKey.get('tenants')).toMatchObject({ name: 'INGEST_TENANTS', type: 'json' });
    for (const key of ['environment', 'lineage.directory', 'events.queue.type', 'onboarding'])
      expect(byKey.has(key), key).toBe(true);
  });

  // Each variable, set to the value the embedded defaults give its key, wins over a file that
  // sets the key to a value of the wrong type: every type (number, string, enum, JSON list or
  // map) is read as the schema wants it, and the variable really sets its key.
  const defaults = loadConfig({ env: {} });
  const withDefault = environmentVariables().filter(
    (v) => valueAt(defaults, v.key) !== undefined && v.key !== 'pipelinesDirectory',
  );
  it.each(withDefault.map((v) => [v.name, v]))('%s sets its key', (name, variable) => {
    const value = valueAt(defaults, variable.key);
    const text = ['json', 'list'].includes(variable.type) ? JSON.stringify(value) : String(value);
    const wrong = variable.key
      .split('.')
      .reduceRight<unknown>(
        (inner, part) => ({ [part]: inner }),
        variable.type === 'boolean' ? 'x' : true,
      );
    const file = temp.write(`wrong-${name}.yaml`, JSON.stringify(wrong));
    expect(() => loadConfig({ env: { INGEST_CONFIG: file } })).toThrow(variable.key);
    const config = loadConfig({ env: { INGEST_CONFIG: file, [name]: text } });
    expect(valueAt(config, variable.key)).toEqual(value);
  });

  it('changes a deep key, an enum, a list and the tenants (as JSON)', () => {
    const config = loadConfig({
      env: {
        INGEST_HTTP__ABUSE__RATE_LIMIT__REQUESTS: '7',
        INGEST_EVENTS__QUEUE__TYPE: 'classic',
        INGEST_BROKER__QUEUES: '[{"name":"q1","bindingKeys":["#"]}]',
        INGEST_TENANTS: JSON.stringify([{ businessId: 'ACME', apiKeyHash: HASH }]),
      },
    });
    expect(config.http.abuse.rateLimit.requests).toBe(7);
    expect(config.events.queue.type).toBe('classic');
    expect(config.broker.queues).toEqual([{ name: 'q1', bindingKeys: ['#'] }]);
    expect(config.tenants.map((t) => t.businessId)).toEqual(['ACME']);
  });

  it('wins over the INGEST_CONFIG file (file < environment), key by key', () => {
    const file = temp.write('layer.yaml', 'http:\n  port: 4000\n  bodyLimitBytes: 2048\n');
    const config = loadConfig({ env: { INGEST_CONFIG: file, INGEST_HTTP__PORT: '5000' } });
    expect(config.http).toMatchObject({ port: 5000, bodyLimitBytes: 2048 });
    expect(loadConfig({ env: { INGEST_CONFIG: file, PORT: '5001' } }).http.port).toBe(5001);
    expect(
      loadConfig({ env: { INGEST_CONFIG: file, INGEST_ENVIRONMENT: 'sandbox' } }).environment,
    ).toBe('sandbox');
  });

  it('names the variable and the key of a wrong value, and refuses two names that disagree', () => {
    expect(problemsOf(() => loadConfig({ env: { INGEST_HTTP__PORT: 'eighty' } }))).toEqual([
      {
        file: 'environment variable INGEST_HTTP__PORT',
        field: 'http.port',
        message: 'Expected number, received string',
      },
    ]);
    expect(problemsOf(() => loadConfig({ env: { INGEST_BROKER__QUEUES: '[{' } }))).toEqual([
      {
        file: 'environment variable INGEST_BROKER__QUEUES',
        field: 'broker.queues',
        message: expect.stringContaining('Expected JSON'),
      },
    ]);
    // The same value under both names is fine; different values are refused, never printed.
    expect(loadConfig({ env: { PORT: '5000', INGEST_HTTP__PORT: '5000' } }).http.port).toBe(5000);
    const url = 'amqp://u:secret-one@mq.example/v';
    const problems = problemsOf(() =>
      loadConfig({ env: { AMQP_URL: url, INGEST_BROKER__URL: 'amqp://u:secret-two@mq/v' } }),
    );
    expect(problems).toEqual([
      {
        file: 'environment variable INGEST_BROKER__URL',
        field: 'broker.url',
        message: 'INGEST_BROKER__URL and AMQP_URL are both set, to different values: keep one',
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('secret-');
  });
});

describe('Redis Sentinel from the environment', () => {
  it('reads REDIS_SENTINELS comma-separated (or as JSON) with REDIS_SENTINEL_MASTER', () => {
    const config = loadConfig({
      env: {
        REDIS_SENTINELS: 'sentinel-1:26379, sentinel-2:26379,[::1]:26380',
        REDIS_SENTINEL_MASTER: 'ingest',
      },
    });
    expect(config.sharedState.redis).toMatchObject({
      sentinels: ['sentinel-1:26379', 'sentinel-2:26379', '[::1]:26380'],
      masterName: 'ingest',
    });
    const json = loadConfig({
      env: {
        INGEST_SHARED_STATE__REDIS__SENTINELS: '["s1:26379"]',
        INGEST_SHARED_STATE__REDIS__MASTER_NAME: 'ingest',
      },
    });
    expect(json.sharedState.redis.sentinels).toEqual(['s1:26379']);
  });

  it('refuses a sentinel without a port, sentinels without a master name, and sentinels beside a URL', () => {
    expect(
      problemsOf(() =>
        loadConfig({ env: { REDIS_SENTINELS: 's1', REDIS_SENTINEL_MASTER: 'ingest' } }),
      ),
    ).toEqual([
      {
        file: 'environment variable REDIS_SENTINELS',
        field: 'sharedState.redis.sentinels[0]',
        message: 'Expected host:port (an IPv6 address in brackets)',
      },
    ]);
    expect(problemsOf(() => loadConfig({ env: { REDIS_SENTINELS: 's1:26379' } }))).toEqual([
      {
        // The variable that asks for it, not default.yaml (which sets only the fields around it).
        file: 'environment variable REDIS_SENTINELS',
        field: 'sharedState.redis.masterName',
        message:
          'Required with sentinels: the name the sentinels monitor (environment variable REDIS_SENTINEL_MASTER)',
      },
    ]);
    expect(problemsOf(() => loadConfig({ env: { REDIS_SENTINEL_MASTER: 'ingest' } }))).toEqual([
      {
        file: 'environment variable REDIS_SENTINEL_MASTER',
        field: 'sharedState.redis.masterName',
        message: 'Only used with sentinels: set sentinels too, or remove it',
      },
    ]);
    expect(
      problemsOf(() =>
        loadConfig({ env: { REDIS_URL: 'redis://r:6379', REDIS_USERNAME: 'u', REDIS_DB: '2' } }),
      ),
    ).toEqual([
      {
        file: 'environment variable REDIS_USERNAME',
        field: 'sharedState.redis.username',
        message:
          'Only used with sentinels: with url, put it in the URL (redis://user:password@host)',
      },
      {
        file: 'environment variable REDIS_DB',
        field: 'sharedState.redis.db',
        message: 'Only used with sentinels: with url, put it in the URL (redis://host:6379/<db>)',
      },
    ]);
    expect(
      problemsOf(() =>
        loadConfig({
          env: {
            REDIS_URL: 'redis://r:6379',
            REDIS_SENTINELS: 's1:26379',
            REDIS_SENTINEL_MASTER: 'ingest',
          },
        }),
      ),
    ).toEqual([
      {
        file: 'environment variable REDIS_SENTINELS',
        field: 'sharedState.redis.sentinels',
        message: 'Set either url or sentinels (with masterName), not both',
      },
    ]);
  });
});

describe('*_FILE: a secret read from a file', () => {
  it('reads AMQP_URL_FILE at start-up, dropping the trailing newline', () => {
    const file = temp.write('amqp-url', 'amqp://ingest:from-a-file@mq.example:5672/prod\n');
    expect(loadConfig({ env: { AMQP_URL_FILE: file } }).broker.url).toEqual([
      'amqp://ingest:from-a-file@mq.example:5672/prod',
    ]);
    const tenants = temp.write(
      'tenants.json',
      JSON.stringify([{ businessId: 'ACME', apiKeyHash: HASH }]),
    );
    expect(
      loadConfig({ env: { INGEST_TENANTS_FILE: tenants } }).tenants.map((t) => t.businessId),
    ).toEqual(['ACME']);
  });

  it('names the variable, the key and the file when it cannot be used, never its content', () => {
    const missing = `${temp.dir}/no-such-secret`;
    const exposed = temp.write('exposed-url', 'amqp://ingest:exposed-pw@mq/v\n', 0o644);
    const empty = temp.write('empty-url', '\n');
    const problems = problemsOf(() =>
      loadConfig({
        env: {
          AMQP_URL_FILE: missing,
          INGEST_BROKER__URL_FILE: exposed,
          INGEST_TENANTS_FILE: empty,
          // Reported in the same run as the files.
          INGEST_LOG__LEVEL: 'loud',
        },
      }),
    );
    expect(problems).toEqual([
      {
        file: 'environment variable INGEST_BROKER__URL_FILE',
        field: 'broker.url',
        message: expect.stringContaining(`run chmod 600 ${exposed}`),
      },
      {
        file: 'environment variable AMQP_URL_FILE',
        field: 'broker.url',
        message: `Cannot read ${missing}: ENOENT`,
      },
      {
        file: 'environment variable INGEST_TENANTS_FILE',
        field: 'tenants',
        message: `${empty} is empty`,
      },
      {
        file: 'environment variable INGEST_LOG__LEVEL',
        field: 'log.level',
        message: expect.stringContaining('Expected one of'),
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('exposed-pw');
  });

  it('is offered for secrets only: <NAME>_FILE of any other key is refused, not ignored', () => {
    const port = temp.write('port', '8080\n');
    expect(problemsOf(() => loadConfig({ env: { PORT_FILE: port } }))).toEqual([
      {
        file: 'environment variable PORT_FILE',
        field: 'http.port',
        message:
          'PORT takes no _FILE variant (only the secrets broker.url, history.url and tenants are read from files): set PORT itself',
      },
    ]);
    expect(
      environmentVariables()
        .filter((v) => v.secret)
        .map((v) => v.key),
    ).toEqual(['broker.url', 'history.url', 'tenants']);
  });
});

describe('a variable that sets nothing is refused, never ignored', () => {
  it('refuses an unknown INGEST_* name, naming the closest variable and its key', () => {
    expect(problemsOf(() => loadConfig({ env: { INGEST_HTTP__PROT: '1' } }))).toEqual([
      {
        file: 'environment variable INGEST_HTTP__PROT',
        field: '(name)',
        message: 'Not a configuration variable; the closest is INGEST_HTTP__PORT (http.port)',
      },
    ]);
    expect(problemsOf(() => loadConfig({ env: { INGEST_TENANT_FILE: '/x' } }))[0]?.message).toBe(
      'Not a configuration variable; the closest is INGEST_TENANTS_FILE (tenants)',
    );
  });

  it('refuses <NAME>_FILE for a key that is not a secret, also for the short names', () => {
    const problems = problemsOf(() =>
      loadConfig({ env: { REDIS_URL_FILE: '/run/secrets/redis', INGEST_LOG__FORMAT_FILE: '/x' } }),
    );
    expect(problems.map(({ file, field }) => `${file}: ${field}`)).toEqual([
      'environment variable REDIS_URL_FILE: sharedState.redis.url',
      'environment variable INGEST_LOG__FORMAT_FILE: log.format',
    ]);
    expect(problems[0]!.message).toContain('INGEST_SHARED_STATE__REDIS__PASSWORD_FILE');
  });

  it('leaves other names alone (a pipeline secret, PATH) and an empty INGEST_* name, which counts as unset', () => {
    const config = loadConfig({
      env: { PATH: '/usr/bin', GLOBEX_S3_KEY_ID: 'k', SOME_TOOL_FILE: '/x', INGEST_HTTP__PROT: '' },
    });
    expect(config.http.port).toBe(3000);
  });
});
