import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'amqplib';
import { afterAll, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { startCli, stopCli, type CliWorker } from '../support/cli-worker.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { tempFolder } from '../support/temp.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

// The hash of a key of this test's own (the demo key's hash is refused with a broker).
const HASH =
  '$scrypt$ln=15,r=8,p=1$P4mj2DSIu5Ti9cXn7sZbXQ==$C3Wzja6iSISVrNvcxP0aEyG7A82Rij+6A97m8yzBm3o=';
const SECRET = testSecret(6);
const EVENTS = 5;

const workers: CliWorker[] = [];
const events = testEventsConfig({ deliveryTimeoutMs: 30_000, concurrencyPerEndpoint: 2 });
const receiver = await startWebhookReceiver([SECRET]);
afterAll(async () => {
  for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
  await receiver.close();
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
});

it('a worker killed (SIGKILL) mid-delivery loses nothing: the next one redelivers with the same webhook-id', async () => {
  const temp = tempFolder('events-crash-');
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
      '  - businessId: ACME',
      `    apiKeyHash: "${HASH}"`,
      '    webhooks:',
      // The query stands for a credential some endpoints carry: it must never reach a log.
      `      - url: ${receiver.url}?token=query-credential`,
      '        secret: { env: ACME_WEBHOOK_SECRET }',
      '',
    ].join('\n'),
  );
  const env = {
    INGEST_CONFIG: config,
    AMQP_URL,
    PORT: '0',
    ADMIN_PORT: '0', // the admin listener too: parallel test files each start a service
    HOST: '127.0.0.1',
    ACME_WEBHOOK_SECRET: SECRET,
  };

  // The first through the CLI, as a newcomer or a partner's integration test would; the rest
  // through the same function, without a process start each.
  const emitted = await runCli(
    [
      'events',
      'emit',
      '--business',
      'ACME',
      '--type',
      'sales-order.shipped',
      // The catalog's data for the type: emit refuses data that does not match it.
      '--data',
      fileURLToPath(new URL('../../fixtures/demo/sales-order-shipped.json', import.meta.url)),
    ],
    { env },
  );
  expect(emitted, emitted.stderr).toMatchObject({ code: 0 });
  const ids = [emitted.stdout.trim()];
  for (let i = 1; i < EVENTS; i++)
    ids.push(
      (
        await emitEvent({
          url: AMQP_URL,
          events,
          businessId: 'ACME',
          type: 'sales-order.shipped',
          data: {},
        })
      ).id,
    );

  receiver.setBehaviour(() => 'hang');
  const first = startCli(['serve'], env);
  workers.push(first);
  await expect.poll(() => receiver.held, { timeout: 30_000, message: first.stderr() }).toBe(2);
  const heldIds = receiver.received.map((r) => r.id);
  await stopCli(first, 'SIGKILL');

  receiver.setBehaviour(() => 200);
  const second = startCli(['serve'], env);
  workers.push(second);
  await expect
    .poll(() => new Set(receiver.received.slice(heldIds.length).map((r) => r.id)).size, {
      timeout: 30_000,
      message: second.stderr(),
    })
    .toBe(EVENTS);
  // Every event delivered; the ones in flight at the kill twice, with the same webhook-id.
  expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(ids));
  for (const id of heldIds)
    expect(receiver.received.filter((r) => r.id === id).length).toBeGreaterThanOrEqual(2);
  expect(receiver.received.every((r) => r.verifiedWith.length === 1)).toBe(true);
  expect((await stopCli(second, 'SIGTERM')).exit).toBe('code 0');

  const delivered = second.lines.filter((line) => line.msg === 'event delivered');
  expect(delivered[0]).toMatchObject({
    businessId: 'ACME',
    type: 'sales-order.shipped',
    endpoint: `127.0.0.1:${receiver.port}`,
    attempt: 1,
  });
  const logs = JSON.stringify([first.lines, second.lines, first.stderr(), second.stderr()]);
  expect(logs).not.toContain('query-credential');
  expect(logs).not.toContain(SECRET.slice('whsec_'.length));
}, 180_000); // three process starts; slow on a loaded machine
