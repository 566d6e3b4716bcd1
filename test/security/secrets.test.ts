/** Secrets: constant-time key comparison, no key in any log line, secret files must be private. */
import { randomBytes } from 'node:crypto';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { digestsEqual, hashApiKey } from '../../src/api-keys.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/operator-errors.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { loadPipelineFiles } from '../../src/drops/definition.js';
import { createDropStore } from '../../src/stores/index.js';
import { ACME, LogCapture, OTHER, basicAuth } from '../support/http-app.js';
import { v1Csv, v1Json, v1Profile } from '../support/hostile-input.js';
import { validRecords } from '../records/fixtures.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder();

describe('digest comparison time does not depend on where the digests differ', () => {
  type Compare = (a: Uint8Array, b: Uint8Array) => boolean;
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1]!;

  /**
   * Median time of comparing against a digest differing in its last byte, over the median for one
   * differing in its first. Long inputs (64 KiB) make an early exit cost microseconds of
   * difference rather than nanoseconds, and the two cases alternate round by round, so load on a
   * shared machine hits both alike. ~1 for a constant-time comparison.
   */
  function lateOverEarly(compare: Compare): number {
    const size = 64 * 1024;
    const secret = randomBytes(size);
    const early = Buffer.from(secret);
    early[0]! ^= 1;
    const late = Buffer.from(secret);
    late[size - 1]! ^= 1;
    const rounds = { early: [] as number[], late: [] as number[] };
    let sink = 0;
    for (let round = 0; round < 61; round++) {
      for (const [name, other] of round % 2
        ? ([
            ['early', early],
            ['late', late],
          ] as const)
        : ([
            ['late', late],
            ['early', early],
          ] as const)) {
        const started = process.hrtime.bigint();
        for (let i = 0; i < 50; i++) sink += compare(secret, other) ? 1 : 0;
        rounds[name].push(Number(process.hrtime.bigint() - started));
      }
    }
    expect(sink).toBe(0);
    return median(rounds.late) / median(rounds.early);
  }

  it('is a real equality check', () => {
    const digest = randomBytes(32);
    expect(digestsEqual(digest, Buffer.from(digest))).toBe(true);
    const other = Buffer.from(digest);
    other[31]! ^= 0x80;
    expect(digestsEqual(digest, other)).toBe(false);
    expect(digestsEqual(digest, digest.subarray(0, 31))).toBe(false);
  });

  it('takes the same time whether the first or the last byte differs (and the harness does catch an early exit)', () => {
    // The harness must be able to fail: an ordinary byte comparison (memcmp) exits at the first difference.
    const leaky = lateOverEarly((a, b) => Buffer.compare(a, b) === 0);
    const ours = lateOverEarly(digestsEqual);
    console.log(
      `timing: late/early ratio ${ours.toFixed(2)} for digestsEqual, ${leaky.toFixed(1)} for Buffer.compare`,
    );
    expect(leaky).toBeGreaterThan(3);
    expect(ours).toBeGreaterThan(0.67);
    expect(ours).toBeLessThan(1.5);
  });
});

describe('no API key in the logs of a full run', () => {
  let service: RunningService;
  const logs = new LogCapture();
  const wrongKey = 'wrong-key-never-log-me-7f3a';

  beforeAll(async () => {
    const tenants = ['tenants:'];
    for (const t of [ACME, OTHER])
      tenants.push(
        `  - businessId: ${t.businessId}`,
        `    apiKeyHash: "${await hashApiKey(t.apiKey)}"`,
      );
    const onboarding = `onboarding: ${JSON.stringify({ ACME: { 'sales-orders': v1Profile('sales-orders') } })}`;
    const config = temp.write(
      'full-run.yaml',
      [`dataDirectory: ${path.join(temp.dir, 'data')}`, ...tenants, onboarding].join('\n'),
    );
    service = await startService({
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        INGEST_CONFIG: config,
        LOG_LEVEL: 'trace',
      },
      log: createLogger({ level: 'trace', destination: logs }),
    });
  });
  afterAll(() => service?.stop());

  it('logs every request (right and wrong keys, v1 and v2, JSON and CSV) without the keys, raw or base64', async () => {
    const post = (p: string, auth: string, body: string, type = 'application/json') =>
      fetch(`${service.url}${p}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': type },
        body,
      });
    const wrong = basicAuth({ ...ACME, apiKey: wrongKey });
    const statuses = [
      (
        await post(
          '/api/v2/sales-orders',
          basicAuth(ACME),
          JSON.stringify(validRecords('sales-orders')),
        )
      ).status,
      (await post('/api/v2/sales-orders', wrong, '[]')).status,
      (await post('/api/v2/master-data', basicAuth(OTHER), '[{}]')).status,
      (await post('/api/v1/sales-orders', basicAuth(ACME), JSON.stringify(v1Json('sales-orders'))))
        .status,
      (await post('/api/v1/sales-orders', basicAuth(ACME), v1Csv('sales-orders'), 'text/csv'))
        .status,
      (await post('/api/v1/sales-orders', wrong, v1Csv('sales-orders'), 'text/csv')).status,
      (
        await post(
          '/api/v1/sales-orders',
          `Basic ${Buffer.from(`${ACME.businessId}:${ACME.apiKey}\u0000`).toString('base64')}`,
          '[]',
        )
      ).status,
      (
        await fetch(`${service.url}/api/v1/customer/ACME/stock`, {
          headers: { authorization: basicAuth(ACME) },
        })
      ).status,
    ];
    expect(statuses).toEqual([202, 401, 400, 202, 202, 401, 401, 501]);
    const text = logs.raw.join('\n');
    expect(logs.raw.length).toBeGreaterThan(8);
    for (const key of [ACME.apiKey, OTHER.apiKey, wrongKey]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(Buffer.from(key).toString('base64'));
      for (const user of [ACME.businessId, OTHER.businessId])
        expect(text).not.toContain(Buffer.from(`${user}:${key}`).toString('base64').slice(0, -4));
    }
  });
});

describe('files holding secrets must be private (no access by others, group read only by root or the service)', () => {
  const hash =
    '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g=';

  it('refuses an INGEST_CONFIG with tenants or a broker password readable by others or writable by its group, naming the file', () => {
    for (const [content, mode, reason] of [
      [
        `tenants:\n  - businessId: ACME\n    apiKeyHash: "${hash}"\n`,
        0o644,
        'is readable or writable by others',
      ],
      [
        `tenants:\n  - businessId: ACME\n    apiKeyHash: "${hash}"\n`,
        0o660,
        'is writable by its group',
      ],
      [
        'broker:\n  url: amqp://user:secret@rabbit:5672\n',
        0o604,
        'is readable or writable by others',
      ],
    ] as const) {
      const file = temp.write(`exposed-${mode}.yaml`, content, mode);
      const load = () => loadConfig({ env: { INGEST_CONFIG: file } });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(
        `${file}: (file): ${file} holds secrets but ${reason} (mode 0${mode.toString(8)}); run chmod 600 ${file}`,
      );
      chmodSync(file, 0o600);
      expect(load().tenants.length + Number(load().broker.url !== undefined)).toBeGreaterThan(0);
    }
    // Without secrets, a readable file is fine.
    expect(
      loadConfig({
        env: { INGEST_CONFIG: temp.write('public.yaml', 'log:\n  level: warn\n', 0o644) },
      }).log.level,
    ).toBe('warn');
  });

  it('refuses a {file} secret of a pipeline readable by others, naming pipeline file, field and secret file; known_hosts may be public', () => {
    const key = temp.write('sftp-key', 'not really a key', 0o644);
    const knownHosts = temp.write('known_hosts', 'host ssh-ed25519 AAAA', 0o644);
    const pipeline = temp.write(
      'drop.yaml',
      [
        'name: acme-drop',
        'businessId: ACME',
        'kind: sales-orders',
        'format: v1-csv',
        `source: { type: sftp, host: 127.0.0.1, username: u, path: /in, privateKey: { file: ${key} }, knownHosts: ${knownHosts} }`,
      ].join('\n'),
    );
    const [definition] = loadPipelineFiles([pipeline], { tenants: ['ACME'] });
    expect(() => createDropStore(definition!, pipeline)).toThrow(
      `${pipeline}: source.privateKey: ${key} holds secrets but is readable or writable by others (mode 0644)`,
    );
    chmodSync(key, 0o600);
    expect(createDropStore(definition!, pipeline).type).toBe('sftp');
  });
});
