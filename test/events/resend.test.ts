import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { connect } from 'amqplib';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { emitEvent } from '../../src/cli/events/emit.js';
import { recoverCommand } from '../../src/cli/events/resend-command.js';
import { helpFor } from '../../src/cli/help.js';
import { ENDPOINT_HEADER } from '../../src/events/retry.js';
import { webhookEndpointId } from '../../src/events/subscriptions.js';
import { assertEventsTopology, eventsTopology } from '../../src/events/topology.js';
import { createEmbeddedHistory } from '../../src/history/embedded/index.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import type { AttemptEntry, EventEntry, HistoryStore } from '../../src/history/store.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import {
  deleteEventsTopology,
  startEventsHarness,
  testEventsConfig,
  webhook,
  type EventsHarness,
} from '../support/events-harness.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';
import {
  startWebhookReceiver,
  testSecret,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

// The hash of a key of this test's own (the demo key's hash is refused with a broker).
const HASH =
  '$scrypt$ln=15,r=8,p=1$P4mj2DSIu5Ti9cXn7sZbXQ==$C3Wzja6iSISVrNvcxP0aEyG7A82Rij+6A97m8yzBm3o=';
const ACME_SECRET = testSecret(21);
const GLOBEX_SECRET = testSecret(22);

const temp = tempFolder('events-resend-');
const events = testEventsConfig({ retrySchedule: [0, 50] });
let database: Awaited<ReturnType<typeof freshDatabase>>;
let store: HistoryStore;
let harness: EventsHarness;
let acmeMain: WebhookReceiver;
let acmeBackup: WebhookReceiver;
let globexMain: WebhookReceiver;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  database = await freshDatabase('resend');
  store = createPostgresHistory({ url: database.url });
  await store.open();
  acmeMain = await startWebhookReceiver([ACME_SECRET]);
  acmeBackup = await startWebhookReceiver([ACME_SECRET]);
  globexMain = await startWebhookReceiver([GLOBEX_SECRET]);
  // Both businesses have an endpoint with the id "main": an id is unique within a business only.
  const tenants = [
    {
      businessId: 'ACME',
      webhooks: [
        webhook(acmeMain.url, 'ACME_SECRET', { id: 'main', events: ['sales-order.*'] }),
        webhook(acmeBackup.url, 'ACME_SECRET', { id: 'backup', events: ['purchase-order.*'] }),
      ],
    },
    { businessId: 'GLOBEX', webhooks: [webhook(globexMain.url, 'GLOBEX_SECRET', { id: 'main' })] },
  ];
  const secrets = { ACME_SECRET, GLOBEX_SECRET };
  harness = await startEventsHarness({ events, env: secrets, tenants });
  const pipelines = path.join(temp.dir, 'pipelines');
  mkdirSync(pipelines);
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${pipelines}`,
      'broker: { queues: [] }',
      `events: ${JSON.stringify(events)}`,
      'tenants:',
      ...tenants.flatMap((tenant) => [
        `  - businessId: ${tenant.businessId}`,
        `    apiKeyHash: "${HASH}"`,
        `    webhooks: ${JSON.stringify(tenant.webhooks)}`,
      ]),
      '',
    ].join('\n'),
  );
  env = {
    INGEST_CONFIG: config,
    AMQP_URL,
    HISTORY_URL: database.url,
    INGEST_HISTORY__ENABLED: 'true',
    ...secrets,
  };
}, 60_000);

afterAll(async () => {
  await harness?.close();
  await Promise.all([acmeMain, acmeBackup, globexMain].map((r) => r?.close()));
  await store?.close();
  await database?.drop();
});

/** What the events consumer writes to the history: the event as received, one row per attempt. */
function eventRow(
  businessId: string,
  type: string,
  occurredAt: Date,
  data: Record<string, unknown> = { ref: randomUUID() },
): EventEntry {
  return {
    id: `evt-${randomUUID()}`,
    type,
    businessId,
    payload: data,
    receivedAt: occurredAt,
    occurredAt,
  };
}

function attemptRow(
  event: EventEntry,
  endpoint: string,
  at: Date,
  end: AttemptEntry['end'],
): AttemptEntry {
  return {
    id: randomUUID(),
    eventId: event.id,
    businessId: event.businessId,
    endpoint,
    at,
    end,
    ...(end === 'delivered' ? { status: 200 } : { status: 503 }),
    durationMs: 12,
  };
}

const of = (receiver: WebhookReceiver, id: string) => receiver.received.filter((r) => r.id === id);

/** The signature checked again here with the `standardwebhooks` package, not our signer. */
function verifies(received: ReceivedWebhook, secret: string): boolean {
  try {
    new Webhook(secret).verify(JSON.stringify(received.body), {
      'webhook-id': received.id,
      'webhook-timestamp': received.timestamp,
      'webhook-signature': received.signature,
    });
    return true;
  } catch {
    return false;
  }
}

describe('events resend', () => {
  it('sends a delivered event again: the original webhook-id, type, time and data, a fresh valid signature', async () => {
    const id = `evt-${randomUUID()}`;
    const data = { orderNumber: 'SO-RESEND-1', lines: [{ sku: 'A', quantity: 2 }] };
    await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'ACME',
      type: 'sales-order.shipped',
      data,
      id,
      correlationId: 'batch-resend-1',
    });
    await expect.poll(() => of(acmeMain, id).length).toBe(1);
    const [original] = of(acmeMain, id);
    const occurredAt = new Date(String(original!.body.timestamp));
    const event = {
      ...eventRow('ACME', 'sales-order.shipped', occurredAt, data),
      id,
      correlationId: 'batch-resend-1',
    };
    await store.write({
      events: [event],
      attempts: [attemptRow(event, 'main', new Date(), 'delivered')],
    });

    const result = await runCli(
      ['events', 'resend', '--id', id, '--business', 'ACME', '--endpoint', 'main'],
      {
        env,
      },
    );
    expect(result, result.stderr).toMatchObject({ code: 0, stdout: `${id}\n` });
    expect(result.stderr).toContain(
      `resent ${id} (sales-order.shipped, ACME, occurred ${occurredAt.toISOString()}) to endpoint main`,
    );
    expect(result.stderr).not.toContain('operator scope');
    await expect.poll(() => of(acmeMain, id).length).toBe(2);
    const again = of(acmeMain, id)[1]!;
    expect(again.body).toEqual(original!.body);
    expect(again.body).toMatchObject({ correlationId: 'batch-resend-1', data });
    expect(again.verifiedWith).toEqual([ACME_SECRET]);
    expect(verifies(again, ACME_SECRET)).toBe(true);
    // Signed at this attempt: its own webhook-timestamp, never the first delivery's signature replayed.
    expect(Number(again.timestamp)).toBeGreaterThanOrEqual(Number(original!.timestamp));
    expect(of(acmeBackup, id)).toEqual([]);
  }, 90_000);

  it('sends a dead event again, to every endpoint subscribed to it now, in the operator scope said on stderr', async () => {
    globexMain.setBehaviour(() => 500);
    const { id } = await emitEvent({
      url: AMQP_URL,
      events,
      businessId: 'GLOBEX',
      type: 'purchase-order.received',
      data: { poNumber: 'PO-DEAD-1' },
    });
    await expect.poll(() => harness.deadCount()).toBe(1);
    const failures = of(globexMain, id);
    expect(failures).toHaveLength(2);
    const event = {
      ...eventRow(
        'GLOBEX',
        'purchase-order.received',
        new Date(String(failures[0]!.body.timestamp)),
        {
          poNumber: 'PO-DEAD-1',
        },
      ),
      id,
    };
    await store.write({
      events: [event],
      attempts: failures.map(() => attemptRow(event, 'main', new Date(), 'failed')),
    });
    globexMain.setBehaviour(() => 200);

    const result = await runCli(['events', 'resend', '--id', id], { env });
    expect(result, result.stderr).toMatchObject({ code: 0, stdout: `${id}\n` });
    expect(result.stderr).toContain("operator scope: every business's history");
    expect(result.stderr).toContain('to every endpoint subscribed to it now');
    await expect.poll(() => of(globexMain, id).length).toBe(3);
    const delivered = of(globexMain, id)[2]!;
    expect(delivered.body).toEqual(failures[0]!.body);
    expect(verifies(delivered, GLOBEX_SECRET)).toBe(true);
    // The dead letter is not touched: the history is the resend's source, the broker's copy stays.
    expect((await harness.deadLetters()).map((m) => m.properties.messageId)).toEqual([id]);
  }, 90_000);

  it("refuses an id it does not know, and another business's event under --business (exit 1)", async () => {
    const theirs = eventRow('GLOBEX', 'sales-order.shipped', new Date());
    await store.write({ events: [theirs] });
    const unknown = await runCli(
      ['events', 'resend', '--id', 'evt-never-seen', '--business', 'ACME'],
      { env },
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no event "evt-never-seen" in the history of ACME');
    const crossTenant = await runCli(
      ['events', 'resend', '--id', theirs.id, '--business', 'ACME'],
      { env },
    );
    expect(crossTenant.code).toBe(1);
    expect(crossTenant.stderr).toContain(`no event "${theirs.id}" in the history of ACME`);
    expect(of(globexMain, theirs.id)).toEqual([]);
  }, 90_000);
});

describe('events recover', () => {
  it('resends to one endpoint, oldest first, only the events not delivered there since the time; --business keeps to its rows', async () => {
    // Whole seconds, as the warehouse's AMQP timestamp carries an event's time.
    const base = Math.floor(Date.now() / 1000 - 3600) * 1000;
    const t = (minutes: number) => new Date(base + minutes * 60_000);
    const since = t(10);
    const failedLate = eventRow('ACME', 'sales-order.shipped', t(20));
    const failedEarly = eventRow('ACME', 'sales-order.created', t(12));
    const beforeSince = eventRow('ACME', 'sales-order.shipped', t(1));
    const deliveredLater = eventRow('ACME', 'sales-order.shipped', t(15));
    const otherEndpoint = eventRow('ACME', 'purchase-order.received', t(16));
    const globex = eventRow('GLOBEX', 'sales-order.shipped', t(17));
    await store.write({
      events: [failedLate, failedEarly, beforeSince, deliveredLater, otherEndpoint, globex],
      attempts: [
        attemptRow(failedLate, 'main', t(20), 'failed'),
        attemptRow(failedLate, 'main', t(21), 'failed'),
        attemptRow(failedEarly, 'main', t(12), 'failed'),
        attemptRow(beforeSince, 'main', t(1), 'failed'),
        attemptRow(deliveredLater, 'main', t(15), 'failed'),
        attemptRow(deliveredLater, 'main', t(16), 'delivered'),
        attemptRow(otherEndpoint, 'backup', t(16), 'failed'),
        attemptRow(globex, 'main', t(17), 'failed'),
      ],
    });
    const args = ['events', 'recover', '--endpoint', 'main', '--since', since.toISOString()];

    const dry = await runCli([...args, '--business', 'ACME', '--dry-run'], { env });
    expect(dry, dry.stderr).toMatchObject({ code: 0 });
    const listed = dry.stdout.trim().split('\n');
    expect(listed[0]).toBe(
      `2 event(s) would be resent to ACME's endpoint main (not delivered there since ${since.toISOString()}):`,
    );
    expect(listed.slice(1).map((line) => line.split('\t')[0])).toEqual([
      failedEarly.id,
      failedLate.id,
    ]);

    const recovered = await runCli([...args, '--business', 'ACME'], { env });
    expect(recovered, recovered.stderr).toMatchObject({ code: 0 });
    expect(
      recovered.stdout
        .trim()
        .split('\n')
        .map((line) => line.split('\t')[0]),
    ).toEqual([failedEarly.id, failedLate.id]);
    expect(recovered.stderr).toContain(
      `resent 2 event(s) to ACME's endpoint main: not delivered there since ${since.toISOString()}`,
    );
    await expect
      .poll(() => of(acmeMain, failedLate.id).length + of(acmeMain, failedEarly.id).length)
      .toBe(2);
    const [late] = of(acmeMain, failedLate.id);
    expect(late!.body).toEqual({
      type: 'sales-order.shipped',
      timestamp: t(20).toISOString(),
      businessId: 'ACME',
      data: failedLate.payload,
    });
    expect(verifies(late!, ACME_SECRET)).toBe(true);
    for (const other of [beforeSince, deliveredLater, globex])
      expect([...of(acmeMain, other.id), ...of(globexMain, other.id)]).toEqual([]);
    expect(of(acmeBackup, otherEndpoint.id)).toEqual([]);

    // The operator's scope: every business with an endpoint "main", said on stderr.
    const operator = await runCli([...args, '--dry-run'], { env });
    expect(operator, operator.stderr).toMatchObject({ code: 0 });
    expect(operator.stderr).toContain("operator scope: every business's history");
    expect(operator.stderr).toContain('the endpoint of ACME (main), GLOBEX (main)');
    expect(operator.stdout).toContain(globex.id);
    expect(operator.stdout).toContain('would be resent to the endpoints of 2 businesses');
  }, 120_000);

  it('draws a progress bar on a terminal, and resends a duration back from now', async () => {
    const failed = eventRow('ACME', 'sales-order.shipped', new Date(Date.now() - 60_000));
    await store.write({
      events: [failed],
      attempts: [attemptRow(failed, 'main', new Date(), 'failed')],
    });
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    const written = { out: '', err: '', terminal: '' };
    try {
      const code = await recoverCommand(
        ['--endpoint', acmeMain.url, '--since', '5m', '--business', 'ACME'],
        { out: (text) => (written.out += text), err: (text) => (written.err += text) },
        {
          out: { write: (text: string) => (written.out += text) },
          err: { write: (text: string) => (written.terminal += text), isTTY: true, columns: 120 },
        },
      );
      expect(code).toBe(0);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(written.out).toContain(`${failed.id}\tsales-order.shipped\tACME`);
    expect(written.terminal).toContain(`[########################] 1/1  ${failed.id}`);
    expect(written.err).toContain("resent 1 event(s) to ACME's endpoint main");
    await expect.poll(() => of(acmeMain, failed.id).length).toBe(1);
  }, 60_000);

  it('leaves to their retry schedule the events still parked for that endpoint', async () => {
    // A schedule of its own, so a parked copy waits ten minutes (no worker runs on it).
    const long = testEventsConfig({ retrySchedule: [0, 600_000] });
    const config = temp.write(
      'long-config.yaml',
      readFileSync(String(env.INGEST_CONFIG), 'utf8').replace(
        `events: ${JSON.stringify(events)}`,
        `events: ${JSON.stringify(long)}`,
      ),
    );
    const parked = eventRow('ACME', 'sales-order.shipped', new Date(Date.now() - 120_000));
    const over = eventRow('ACME', 'sales-order.shipped', new Date(Date.now() - 60_000));
    await store.write({
      events: [parked, over],
      attempts: [parked, over].map((e) => attemptRow(e, 'main', new Date(), 'failed')),
    });
    const connection = await connect(AMQP_URL);
    try {
      const channel = await connection.createConfirmChannel();
      const topology = eventsTopology(long);
      await assertEventsTopology(channel, topology, long.queue.type, () =>
        connection.createChannel(),
      );
      const main = webhookEndpointId('ACME', { id: 'main', url: acmeMain.url });
      channel.sendToQueue(topology.retryQueues.get(600_000)!, Buffer.from('{}'), {
        messageId: parked.id,
        type: parked.type,
        headers: { 'business-id': 'ACME', [ENDPOINT_HEADER]: main },
      });
      await channel.waitForConfirms();
      for (const [name, value] of Object.entries({ ...env, INGEST_CONFIG: config }))
        vi.stubEnv(name, value);
      const written = { out: '', err: '' };
      const io = { out: (t: string) => (written.out += t), err: (t: string) => (written.err += t) };
      try {
        const code = await recoverCommand(
          ['--endpoint', 'main', '--since', '10m', '--business', 'ACME', '--dry-run'],
          io,
          { out: { write: io.out }, err: { write: io.err } },
        );
        expect(code).toBe(0);
      } finally {
        vi.unstubAllEnvs();
      }
      expect(written.out).toContain(over.id);
      expect(written.out).not.toContain(parked.id);
      expect(written.err).toContain(
        "left 1 event(s) to their retry schedule at ACME's endpoint main",
      );
      // Looked at, not taken: the parked copy is still there (a quorum queue takes back a closed
      // channel's unacknowledged messages asynchronously, so its count comes back a moment later).
      await expect
        .poll(
          async () => (await channel.checkQueue(topology.retryQueues.get(600_000)!)).messageCount,
        )
        .toBe(1);
      await deleteEventsTopology(channel, long);
    } finally {
      await connection.close();
    }
  }, 60_000);

  it('says an endpoint no business has, and a time it cannot read', async () => {
    const unknown = await runCli(['events', 'recover', '--endpoint', 'nowhere', '--since', '2h'], {
      env,
    });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no configured webhook has the id or URL "nowhere"');
    const badTime = await runCli(
      ['events', 'recover', '--endpoint', 'main', '--since', 'yesterday'],
      { env },
    );
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toContain('--since must be a duration');
  }, 90_000);
});

describe('events resend and recover: the history they read', () => {
  it('says how to turn the history on', async () => {
    const off = await runCli(['events', 'resend', '--id', 'evt-1'], {
      env: { ...env, INGEST_HISTORY__ENABLED: 'false' },
    });
    expect(off.code).toBe(2);
    expect(off.stderr).toContain(
      'reads the history, which is off: turn it on with history.enabled: true',
    );
  }, 60_000);

  it('reads the embedded history while the running process has it open', async () => {
    const dataDirectory = path.join(temp.dir, 'served');
    const held = createEmbeddedHistory({ directory: path.join(dataDirectory, 'history') });
    await held.open();
    const { HISTORY_URL: _, ...embedded } = env;
    try {
      const result = await runCli(
        ['events', 'recover', '--endpoint', 'main', '--since', '2h', '--dry-run'],
        { env: { ...embedded, INGEST_DATA_DIRECTORY: dataDirectory } },
      );
      expect(result.stderr).not.toContain('could not be read');
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('0 event(s) would be resent to');
    } finally {
      await held.close();
    }
    // And `help events` says so, rather than asking for serve to be stopped.
    const help = helpFor('events').replace(/\s+/g, ' ');
    expect(help).not.toContain('only while serve is stopped');
    expect(help).toContain('an embedded one is read through the running serve');
  }, 90_000);
});
