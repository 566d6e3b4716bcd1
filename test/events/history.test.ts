import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GetMessage } from 'amqplib';
import { emitEvent } from '../../src/cli/events/emit.js';
import { eventsStatus } from '../../src/cli/events/status.js';
import { switchEndpoint, targetsOf } from '../../src/cli/events/switch.js';
import type { EventsConfig, WebhookConfig } from '../../src/events/config.js';
import type { EventsHistory } from '../../src/events/shared-state.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { HistoryStore } from '../../src/history/store.js';
import { createHistoryWriter, type HistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import {
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { freshDatabase, onDatabase } from '../support/postgres.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

/**
 * The outbound half and the history on the real broker and PostgreSQL: what is written, and
 * endpoint state shared by workers (control words, and the history at start-up).
 */
const open = closedAfterEach();
const silent = createLogger({ level: 'silent' });
let database: Awaited<ReturnType<typeof freshDatabase>>;
let reader: HistoryStore;

beforeAll(async () => {
  database = await freshDatabase('events');
  reader = createPostgresHistory({ url: database.url });
  await reader.open();
});
afterAll(async () => {
  await reader?.close();
  await database?.drop();
});

/** A worker's history on `url`: a store, and its writer flushing at once. */
function workerHistory(
  url: string,
): EventsHistory & { writer: HistoryWriter; close(): Promise<void> } {
  const store = createPostgresHistory({ url });
  const writer = createHistoryWriter({
    store,
    log: silent,
    metrics: { deferred: () => undefined, dropped: () => undefined },
    maxPendingRows: 10_000,
    flushMs: 10,
    retryDelayMs: [50, 200],
  });
  return {
    writer,
    async endpointStates() {
      await store.open();
      return store.endpointStates({ operator: true });
    },
    async close() {
      await writer.close();
      await store.close();
    },
  };
}

async function worker(
  events: EventsConfig,
  tenants: ReadonlyArray<{ businessId: string; webhooks: WebhookConfig[] }>,
  env: Record<string, string>,
  history?: ReturnType<typeof workerHistory>,
): Promise<EventsHarness> {
  const harness = await startEventsHarness({
    events,
    env,
    tenants,
    keepTopology: true,
    ...(history && { history }),
  });
  // Closed once: by the test (a restart) or after it.
  let closing: Promise<void> | undefined;
  const once = { ...harness, close: () => (closing ??= harness.close()) };
  if (history) open.push(history);
  open.push(once);
  return once;
}

const disabledGauge = async (harness: EventsHarness) => {
  const text = await harness.registry.getSingleMetricAsString('warehouse_ingest_event_endpoints');
  return Number(/state="disabled"} (\d+)/.exec(text)?.[1] ?? 0);
};

const header = (message: GetMessage, name: string) =>
  String(message.properties.headers?.[name] ?? '');

describe('events and the history', () => {
  it('writes each event once, every attempt with its answer, and endpoint state changes; never a secret', async () => {
    const secret = testSecret(71);
    const receiver = await startWebhookReceiver([secret]);
    open.push(receiver);
    receiver.setBehaviour((_, nth) => (nth === 1 ? 503 : 200));
    const events = testEventsConfig({ retrySchedule: [0, 50] });
    const tenants = [
      {
        businessId: 'HIST-A',
        webhooks: [webhook(receiver.url, 'A_SECRET', { id: 'a-orders' })],
      },
      { businessId: 'HIST-B', webhooks: [webhook(`${receiver.url}?token=b`, 'A_SECRET')] },
    ];
    await worker(events, tenants, { A_SECRET: secret }, workerHistory(database.url));
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'HIST-A',
      type: 'sales-order.shipped',
      data: { orderId: 'SO-1' },
    });
    const { id: other } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'HIST-B',
      type: 'sales-order.shipped',
      data: { orderId: 'SO-2' },
    });
    const scope = { businessId: 'HIST-A' };
    await expect
      .poll(async () => (await reader.attempts(scope, id)).map((a) => a.end), { timeout: 15_000 })
      .toEqual(['failed', 'delivered']);
    const [failed, delivered] = await reader.attempts(scope, id);
    expect(failed).toMatchObject({
      endpoint: 'a-orders',
      status: 503,
      responseExcerpt: 'status 503',
      error: 'HTTP 503: status 503',
    });
    expect(delivered).toMatchObject({
      endpoint: 'a-orders',
      status: 200,
      responseExcerpt: 'status 200',
    });
    expect(delivered!.durationMs).toBeGreaterThanOrEqual(0);
    // Written once: the retry copy is not a new arrival.
    const rows = await onDatabase(
      async (c) => (await c.query('select id, payload from history_events')).rows,
      database.url,
    );
    expect(rows.filter((row) => row.id === id)).toEqual([{ id, payload: { orderId: 'SO-1' } }]);
    // What a resend needs to send the same body: when it happened.
    expect((await reader.event(scope, id))?.occurredAt).toBeInstanceOf(Date);
    // An endpoint without an id is named by its full URL, never host:port alone.
    await expect
      .poll(async () =>
        (await reader.attempts({ businessId: 'HIST-B' }, other)).map((a) => a.endpoint),
      )
      .toEqual([`${receiver.url}?token=b`]);
    // Failing, then recovered: both kept as the endpoint's state changed.
    await expect
      .poll(async () => (await reader.endpointStates(scope)).map((s) => [s.endpoint, s.enabled]))
      .toEqual([['a-orders', true]]);
    const everything = await onDatabase(async (c) => {
      const tables = [];
      for (const table of ['history_events', 'history_attempts', 'history_endpoints'])
        tables.push((await c.query(`select * from ${table}`)).rows);
      return JSON.stringify(tables);
    }, database.url);
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(secret.replace(/^whsec_/, ''));
    expect(everything).not.toContain(receiver.received[0]!.signature);
    expect(everything).not.toMatch(/webhook-signature|v1,/);
  });

  it('a 410 seen by one worker disables the endpoint in every worker; enable turns it back on in both without a restart; a restart keeps it disabled', async () => {
    const secret = testSecret(72);
    const receiver = await startWebhookReceiver([secret]);
    open.push(receiver);
    receiver.setBehaviour(() => 410);
    const events = testEventsConfig();
    const tenants = [
      { businessId: 'GONE', webhooks: [webhook(receiver.url, 'G_SECRET', { id: 'gone-hook' })] },
    ];
    const env = { G_SECRET: secret };
    const workers = [
      await worker(events, tenants, env, workerHistory(database.url)),
      await worker(events, tenants, env, workerHistory(database.url)),
    ];
    const emit = () =>
      emitEvent({
        url: AMQP_URL,
        events,
        businessId: 'GONE',
        type: 'sales-order.shipped',
        data: {},
      });
    await emit();
    await expect.poll(() => receiver.received.length).toBe(1);
    // Told to both: the other worker never met the 410 itself.
    for (const w of workers) await expect.poll(() => disabledGauge(w)).toBe(1);
    await expect
      .poll(async () => (await reader.endpointStates({ businessId: 'GONE' }))[0])
      .toMatchObject({ endpoint: 'gone-hook', enabled: false, disabledBy: 'gone' });
    for (let i = 0; i < 4; i++) await emit();
    const dead = async () => (await Promise.all(workers.map((w) => w.deadLetters()))).flat();
    let letters: GetMessage[] = [];
    await expect.poll(async () => (letters = [...letters, ...(await dead())]).length).toBe(5);
    expect(letters.map((l) => header(l, 'x-dead-reason'))).toEqual(Array(5).fill('endpoint-gone'));
    expect(receiver.received).toHaveLength(1);

    const options = { url: AMQP_URL, events, tenants, endpoint: 'gone-hook' };
    const targets = targetsOf(options);
    expect(targets).toMatchObject([
      { businessId: 'GONE', endpoint: 'gone-hook', ref: { kind: 'webhook' } },
    ]);
    receiver.setBehaviour(() => 200);
    await switchEndpoint({ ...options, action: 'enable' }, targets);
    for (const w of workers) await expect.poll(() => disabledGauge(w)).toBe(0);
    for (let i = 0; i < 4; i++) await emit();
    await expect.poll(() => receiver.received.length).toBe(5);

    const history = createPostgresHistory({ url: database.url });
    const result = await switchEndpoint({ ...options, action: 'disable', history }, targets);
    expect(result.history).toBe('written');
    for (const w of workers) await expect.poll(() => disabledGauge(w)).toBe(1);
    await emit();
    await expect
      .poll(async () => (await dead()).map((l) => header(l, 'x-dead-reason')))
      .toEqual(['endpoint-disabled']);

    // Every worker stops; one starts again: it reads the decision from the history.
    for (const w of workers) await w.close();
    const restarted = await worker(events, tenants, env, workerHistory(database.url));
    expect(await disabledGauge(restarted)).toBe(1);
    await emit();
    await expect
      .poll(async () => (await restarted.deadLetters()).map((l) => header(l, 'x-dead-reason')))
      .toEqual(['endpoint-disabled']);
    expect(receiver.received).toHaveLength(5);
  });

  it('delivers on while the history is unreachable', async () => {
    const secret = testSecret(73);
    const receiver = await startWebhookReceiver([secret]);
    open.push(receiver);
    const events = testEventsConfig();
    const tenants = [{ businessId: 'NOHIST', webhooks: [webhook(receiver.url, 'N_SECRET')] }];
    const history = workerHistory('postgres://postgres@127.0.0.1:1/none');
    await worker(events, tenants, { N_SECRET: secret }, history);
    for (let i = 0; i < 3; i++)
      await emitEvent({
        url: AMQP_URL,
        events,
        businessId: 'NOHIST',
        type: 'sales-order.shipped',
        data: { i },
      });
    await expect.poll(() => receiver.received.length).toBe(3);
    await expect.poll(() => history.writer.reachable).toBe(false);
    expect(history.writer.pendingRows).toBeGreaterThan(0);
  });

  it("status for one business shows its endpoints' history and never another business's", async () => {
    const secret = testSecret(74);
    const receiver = await startWebhookReceiver([secret]);
    open.push(receiver);
    receiver.setBehaviour((received) =>
      received.body.type === 'sales-order.cancelled' ? 500 : 200,
    );
    const events = testEventsConfig({ retrySchedule: [0] });
    const tenants = [
      { businessId: 'TEN-A', webhooks: [webhook(receiver.url, 'T_SECRET', { id: 'shared-name' })] },
      { businessId: 'TEN-B', webhooks: [webhook(receiver.url, 'T_SECRET', { id: 'shared-name' })] },
    ];
    await worker(events, tenants, { T_SECRET: secret }, workerHistory(database.url));
    await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'TEN-A',
      type: 'sales-order.shipped',
      data: {},
    });
    await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'TEN-B',
      type: 'sales-order.cancelled',
      data: {},
    });
    await expect
      .poll(
        async () =>
          (await reader.endpointActivity({ operator: true })).filter((e) =>
            e.businessId.startsWith('TEN-'),
          ).length,
      )
      .toBe(2);
    const status = await eventsStatus({
      url: AMQP_URL,
      events,
      tenants,
      history: createPostgresHistory({ url: database.url }),
      businessId: 'TEN-A',
    });
    expect(status.history).toBe('read');
    const a = status.endpoints.find((e) => e.businessId === 'TEN-A')!;
    expect(a.name).toBe('shared-name');
    expect(a.history).toMatchObject({ enabled: true, delivered: 1, failed: 0 });
    expect(a.history!.lastAttempts).toEqual([
      expect.objectContaining({ end: 'delivered', status: 200 }),
    ]);
    // The same endpoint name in another business: nothing of it shown.
    expect(status.endpoints.map((e) => e.businessId)).toEqual(['TEN-A']);
    expect(JSON.stringify(status)).not.toContain('TEN-B');
    expect(JSON.stringify(status)).not.toContain('HTTP 500');

    const all = await eventsStatus({
      url: AMQP_URL,
      events,
      tenants,
      history: createPostgresHistory({ url: database.url }),
    });
    const b = all.endpoints.find((e) => e.businessId === 'TEN-B')?.history;
    expect(b?.failed).toBeGreaterThanOrEqual(1);
    expect(b?.failingSince).toEqual(expect.any(String));
  });
});
