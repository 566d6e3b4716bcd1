/**
 * An event dead-lettered while its endpoint was disabled (docs/events.md, "Disabling an
 * endpoint"): the history keeps a failed attempt for it, saying why it never came, so the partner
 * sees it (`GET /api/v2/events`) and `events recover` sends it once the endpoint is enabled
 * again, as the docs promise. On the real broker, a real worker writing to PostgreSQL.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { recoverCommand } from '../../src/cli/events/resend-command.js';
import { switchEndpoint, targetsOf } from '../../src/cli/events/switch.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { AMQP_URL } from '../support/broker.js';
import {
  type EventsHarness,
  startEventsHarness,
  testEventsConfig,
  webhook,
} from '../support/events-harness.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';
import {
  startWebhookReceiver,
  testSecret,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const HASH =
  '$scrypt$ln=15,r=8,p=1$P4mj2DSIu5Ti9cXn7sZbXQ==$C3Wzja6iSISVrNvcxP0aEyG7A82Rij+6A97m8yzBm3o=';
const SECRET = testSecret(81);
const temp = tempFolder('events-recover-disabled-');
const events = testEventsConfig({ retrySchedule: [0, 50] });
const tenants = [
  { businessId: 'PAUSED', webhooks: [webhook('', 'PAUSED_SECRET', { id: 'main' })] },
];
let database: Awaited<ReturnType<typeof freshDatabase>>;
let reader: HistoryStore;
let writerStore: HistoryStore;
let receiver: WebhookReceiver;
let harness: EventsHarness;
let env: Record<string, string>;

beforeAll(async () => {
  database = await freshDatabase('recoverdisabled');
  reader = createPostgresHistory({ url: database.url });
  await reader.open();
  receiver = await startWebhookReceiver([SECRET]);
  tenants[0]!.webhooks[0] = webhook(receiver.url, 'PAUSED_SECRET', { id: 'main' });
  writerStore = createPostgresHistory({ url: database.url });
  const writer = createHistoryWriter({
    store: writerStore,
    log: createLogger({ level: 'silent' }),
    metrics: { deferred: () => undefined, dropped: () => undefined },
    maxPendingRows: 10_000,
    flushMs: 10,
    retryDelayMs: [50, 200],
  });
  harness = await startEventsHarness({
    events,
    tenants,
    env: { PAUSED_SECRET: SECRET },
    history: {
      writer,
      async endpointStates() {
        await writerStore.open();
        return writerStore.endpointStates({ operator: true });
      },
    },
  });
  mkdirSync(path.join(temp.dir, 'pipelines'));
  env = {
    INGEST_CONFIG: temp.write(
      'config.yaml',
      [
        `dataDirectory: ${temp.dir}/data`,
        `pipelinesDirectory: ${temp.dir}/pipelines`,
        'broker: { queues: [] }',
        `events: ${JSON.stringify(events)}`,
        'tenants:',
        '  - businessId: PAUSED',
        `    apiKeyHash: "${HASH}"`,
        `    webhooks: ${JSON.stringify(tenants[0]!.webhooks)}`,
        '',
      ].join('\n'),
    ),
    AMQP_URL,
    HISTORY_URL: database.url,
    INGEST_HISTORY__ENABLED: 'true',
    PAUSED_SECRET: SECRET,
  };
}, 60_000);

afterAll(async () => {
  await harness?.close();
  await receiver?.close();
  await writerStore?.close();
  await reader?.close();
  await database?.drop();
});

describe('an event dead-lettered while its endpoint is disabled', () => {
  it('shows as a failed attempt saying why, and events recover sends it after enable', async () => {
    const options = { url: AMQP_URL, events, tenants, endpoint: 'main' };
    const targets = targetsOf(options);
    const history = createPostgresHistory({ url: database.url });
    // It opens and closes the history itself.
    await switchEndpoint({ ...options, action: 'disable', history }, targets);
    await expect
      .poll(async () => (await reader.endpointStates({ businessId: 'PAUSED' }))[0]?.enabled, {
        timeout: 15_000,
      })
      .toBe(false);

    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'PAUSED',
      type: 'sales-order.shipped',
      data: { orderNumber: 'SO-PAUSED-1' },
    });
    await expect.poll(() => harness.deadCount(), { timeout: 15_000 }).toBe(1);
    const scope = { businessId: 'PAUSED' };
    await expect
      .poll(async () => (await reader.attempts(scope, id)).length, { timeout: 15_000 })
      .toBe(1);
    const [attempt] = await reader.attempts(scope, id);
    expect(attempt).toMatchObject({ endpoint: 'main', end: 'failed', durationMs: 0 });
    expect(attempt?.error).toMatch(/^Not attempted: endpoint disabled by the operator/);
    expect(receiver.received).toHaveLength(0);

    await switchEndpoint({ ...options, action: 'enable' }, targets);
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    const written = { out: '', err: '' };
    try {
      const code = await recoverCommand(
        ['--endpoint', 'main', '--since', '10m', '--business', 'PAUSED'],
        { out: (text) => (written.out += text), err: (text) => (written.err += text) },
        {
          out: { write: (text: string) => (written.out += text) },
          err: { write: (text: string) => (written.err += text) },
        },
      );
      expect(code, written.err).toBe(0);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(written.out).toContain(`${id}\tsales-order.shipped\tPAUSED`);
    await expect.poll(() => receiver.received.map((r) => r.id), { timeout: 15_000 }).toEqual([id]);
  }, 60_000);
});
