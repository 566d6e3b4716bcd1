import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { LogCapture } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/**
 * The history on by default (issue 39): `serve` with no configuration keeps a batch that the
 * partner API and `lineage` then find; production with a broker the same; `history.enabled:
 * false` answers as docs/history.md#turning-it-off says.
 */
const temp = tempFolder('history-default-');
const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
/** The README's curl: the demo orders with the demo credentials. */
const orders = readFileSync(new URL('../../fixtures/demo/sales-orders.json', import.meta.url));
const firstShipment = (
  JSON.parse(orders.toString('utf8')) as Array<{ identifiers: { shipmentId: string } }>
)[0]!.identifiers.shipmentId;

const running: RunningService[] = [];
afterAll(async () => {
  await Promise.all(running.map((service) => service.stop()));
});

/**
 * `serve` as `npm start` runs it, with nothing configured but where its files go (the default,
 * `./data`, is the checkout's own) and an empty pipelines folder.
 */
async function serve(name: string, env: NodeJS.ProcessEnv = {}) {
  const dataDirectory = path.join(temp.dir, name, 'data');
  const pipelines = path.join(temp.dir, name, 'pipelines');
  mkdirSync(pipelines, { recursive: true });
  const logs = new LogCapture();
  const base = {
    INGEST_DATA_DIRECTORY: dataDirectory,
    INGEST_PIPELINES_DIRECTORY: pipelines,
    ...env,
  };
  const service = await startService({
    env: { PORT: '0', ADMIN_PORT: '0', ...base },
    log: createLogger({ destination: logs }),
  });
  running.push(service);
  return { service, logs, dataDirectory, cliEnv: base };
}

const post = (service: RunningService, authorization: string) =>
  fetch(`${service.url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: orders,
  });

/** The partner API's list of batches, polled until the writer flushed the one named. */
async function listed(service: RunningService, authorization: string, correlationId: string) {
  let body: { items?: Array<Record<string, unknown>> } = {};
  await expect
    .poll(
      async () => {
        const response = await fetch(`${service.url}/api/v2/batches`, {
          headers: { authorization },
        });
        body = (await response.json()) as typeof body;
        return body.items?.some((batch) => batch.correlationId === correlationId) ?? false;
      },
      { timeout: 20_000 },
    )
    .toBe(true);
  return body.items?.find((batch) => batch.correlationId === correlationId);
}

describe('the history on by default', () => {
  it('npm start with no configuration: the README batch is listed by the partner API and found by lineage', async () => {
    const { service, logs, dataDirectory, cliEnv } = await serve('development', {
      INGEST_ENV: 'development',
    });
    const file = path.join(dataDirectory, 'history', 'history.sqlite');
    expect(logs.lines).toContainEqual(
      expect.objectContaining({
        msg: 'history: on, opened with the first write',
        store: 'embedded',
        where: file,
      }),
    );
    const response = await post(service, DEMO);
    expect(response.status).toBe(202);
    const { correlationId, recordCount } = (await response.json()) as {
      correlationId: string;
      recordCount: number;
    };
    expect(await listed(service, DEMO, correlationId)).toMatchObject({
      outcome: 'accepted',
      recordCount,
    });
    expect(existsSync(file)).toBe(true);

    // Another process, beside the running serve, on the same embedded file.
    const found = await runCli(['lineage', firstShipment, '--json'], {
      env: { ...cliEnv, INGEST_ENV: 'development' },
      timeoutMs: 60_000,
    });
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout).toContain(`"source":"history"`);
    expect(found.stdout).toContain(correlationId);
  }, 120_000);

  it('production with a broker: the same, and a fleet on the embedded store sharing Redis is warned', async () => {
    const exchange = uniqueName('history-default.x');
    const queue = uniqueName('history-default.q');
    const key = 'history-default-production-key';
    const config = temp.write(
      'production.yaml',
      stringify({
        tenants: [{ businessId: 'DEMO', apiKeyHash: await hashApiKey(key) }],
        broker: { exchange, queues: [{ name: queue, bindingKeys: ['#'] }] },
        sharedState: { redis: { keyPrefix: `${uniqueName('history-default')}:` } },
      }),
    );
    try {
      const { service, logs } = await serve('production', {
        INGEST_ENV: 'production',
        INGEST_CONFIG: config,
        AMQP_URL,
        HOST: '127.0.0.1',
        REDIS_URL: 'redis://127.0.0.1:6379/0',
      });
      const acme = `Basic ${Buffer.from(`DEMO:${key}`).toString('base64')}`;
      expect(logs.lines).toContainEqual(
        expect.objectContaining({ msg: 'history: on, opened with the first write' }),
      );
      expect(logs.lines).toContainEqual(
        expect.objectContaining({
          msg: expect.stringMatching(
            /^history: embedded, while instances share state through Redis/,
          ),
        }),
      );
      const response = await fetch(`${service.url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: { authorization: acme, 'content-type': 'application/json' },
        body: orders,
      });
      expect(response.status).toBe(202);
      const { correlationId } = (await response.json()) as { correlationId: string };
      expect(await listed(service, acme, correlationId)).toMatchObject({ outcome: 'accepted' });
    } finally {
      const connection = await connect(AMQP_URL);
      const channel = await connection.createChannel();
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
      await connection.close();
    }
  }, 120_000);

  it('history.enabled false: nothing opened, the partner API answers 404, and a HISTORY_URL beside it is named as unused', async () => {
    const { service, logs, dataDirectory } = await serve('off', {
      INGEST_ENV: 'development',
      INGEST_HISTORY__ENABLED: 'false',
      HISTORY_URL: 'postgres://ingest:secret-password@db.example:5432/ingest_history',
    });
    const warning = logs.lines.find((line) => String(line.msg).startsWith('history: off'));
    expect(warning).toMatchObject({
      level: 'warn',
      ignored: 'history.url',
      where: 'db.example:5432/ingest_history',
    });
    expect(JSON.stringify(logs.lines)).not.toContain('secret-password');
    const response = await post(service, DEMO);
    expect(response.status).toBe(202);
    const { correlationId } = (await response.json()) as { correlationId: string };
    const read = await fetch(`${service.url}/api/v2/batches/${correlationId}`, {
      headers: { authorization: DEMO },
    });
    expect(read.status).toBe(404);
    expect(existsSync(path.join(dataDirectory, 'history'))).toBe(false);
  }, 120_000);

  it('HISTORY_URL alone chooses PostgreSQL (issue 38 item 11): named at start-up without credentials, and written', async () => {
    const database = await freshDatabase('default_on');
    try {
      const url = new URL(database.url);
      url.password = 'not-logged';
      const { service, logs } = await serve('postgres', {
        INGEST_ENV: 'development',
        HISTORY_URL: url.toString(),
      });
      expect(logs.lines).toContainEqual(
        expect.objectContaining({
          msg: 'history: on, opened with the first write',
          store: 'postgres',
          where: `${url.host}${url.pathname}`,
        }),
      );
      expect(JSON.stringify(logs.lines)).not.toContain('not-logged');
      const response = await post(service, DEMO);
      expect(response.status).toBe(202);
      const { correlationId } = (await response.json()) as { correlationId: string };
      expect(await listed(service, DEMO, correlationId)).toMatchObject({ outcome: 'accepted' });
      await service.stop();
    } finally {
      await database.drop();
    }
  }, 120_000);
});
