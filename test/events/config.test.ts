import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_RETRY_SCHEDULE } from '../../src/events/config.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder();
const HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';

const withWebhook = (environment: string, url: string, extra = '') =>
  temp.write(
    `${environment}-${url.length}-${extra.length}.yaml`,
    `environment: ${environment}
broker: { url: "amqp://127.0.0.1:5672" }
tenants:
  - businessId: ACME
    apiKeyHash: "${HASH}"
    webhooks:
      - url: ${url}
        secret: { env: ACME_WEBHOOK_SECRET }
${extra}`,
  );

describe('events configuration', () => {
  it('defaults so that configurations without events still load', () => {
    const config = loadConfig({ env: {} });
    expect(config.events).toEqual({
      exchange: 'warehouse.events',
      queue: { name: 'warehouse-ingest.events', type: 'quorum' },
      prefetch: 128,
      deliveryTimeoutMs: 15000,
      retrySchedule: DEFAULT_RETRY_SCHEDULE,
      responseBodyLimitBytes: 4096,
      concurrencyPerEndpoint: 16,
      circuit: { failures: 5, coolDownMs: 30000, maxCoolDownMs: 600000 },
    });
    expect(config.tenants[0]?.webhooks).toBeUndefined();
  });

  it('reads a webhook with its defaults (all events, enabled, no private network)', () => {
    const config = loadConfig({
      env: { INGEST_CONFIG: withWebhook('development', 'http://127.0.0.1:9000/hook') },
    });
    expect(config.tenants[0]?.webhooks).toEqual([
      {
        url: 'http://127.0.0.1:9000/hook',
        secret: { env: 'ACME_WEBHOOK_SECRET' },
        events: ['**'],
        enabled: true,
        allowPrivateNetwork: false,
      },
    ]);
  });

  it('refuses http:// and localhost in production unless allowPrivateNetwork', () => {
    for (const url of ['http://hooks.acme.example/in', 'https://localhost/in']) {
      const file = withWebhook('production', url);
      expect(problemsOf(() => loadConfig({ env: { INGEST_CONFIG: file } }))).toEqual([
        expect.objectContaining({ file, field: 'tenants[0].webhooks[0].url' }),
      ]);
    }
    const allowed = withWebhook(
      'production',
      'http://10.0.0.8/in',
      '        allowPrivateNetwork: true\n',
    );
    expect(loadConfig({ env: { INGEST_CONFIG: allowed } }).tenants[0]?.webhooks).toHaveLength(1);
  });
});
