/**
 * The event catalog at both ends of the broker (real RabbitMQ): `events emit` publishes only
 * what the catalog documents, and a worker delivers whatever the warehouse sends, counting what
 * breaks the catalog.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { eventsTopology } from '../../src/events/topology.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { closedAfterEach } from '../support/closing.js';
import {
  deleteEventsTopology,
  startEventsHarness,
  testEventsConfig,
  webhook,
} from '../support/events-harness.js';
import { tempFolder } from '../support/temp.js';
import { startWebhookReceiver, testSecret } from '../support/webhook-receiver.js';

// The hash of a key of this test's own (the demo key's hash is refused with a broker).
const HASH =
  '$scrypt$ln=15,r=8,p=1$P4mj2DSIu5Ti9cXn7sZbXQ==$C3Wzja6iSISVrNvcxP0aEyG7A82Rij+6A97m8yzBm3o=';
const SECRET = testSecret(7);

describe('events emit checks the data against the catalog (a process, real RabbitMQ)', () => {
  const events = testEventsConfig();
  afterAll(async () => {
    const connection = await connect(AMQP_URL);
    await deleteEventsTopology(await connection.createChannel(), events);
    await connection.close();
  });

  it('publishes valid data, and refuses an unknown type or invalid data with exit 2, naming each field, publishing nothing', async () => {
    const temp = tempFolder('emit-catalog-');
    mkdirSync(path.join(temp.dir, 'pipelines'));
    const env = {
      AMQP_URL,
      INGEST_CONFIG: temp.write(
        'config.yaml',
        [
          `dataDirectory: ${temp.dir}/data`,
          `pipelinesDirectory: ${temp.dir}/pipelines`,
          'broker: { queues: [] }',
          `events: ${JSON.stringify(events)}`,
          'tenants:',
          '  - businessId: ACME',
          `    apiKeyHash: "${HASH}"`,
          '',
        ].join('\n'),
      ),
    };
    const emit = (type: string, data: unknown) =>
      runCli(
        [
          'events',
          'emit',
          '--business',
          'ACME',
          '--type',
          type,
          '--data',
          temp.write(`${type}-${Math.random()}.json`, JSON.stringify(data)),
        ],
        { env },
      );
    // The valid one first: it declares the queue, so the refused ones had somewhere to go.
    const valid = await emit('purchase-order.received', {
      orderNumber: 'PO-9',
      lines: [{ sku: 'A-1', qty: 40 }],
    });
    expect(valid, valid.stderr).toMatchObject({ code: 0, stderr: '' });
    const id = valid.stdout.trim();

    const unknown = await emit('sales-order.cancelled', { orderNumber: 'SO-1' });
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(unknown.stderr).toBe(
      'warehouse-ingest: unknown event type "sales-order.cancelled": the event catalog (docs/event-catalog.md) lists sales-order.shipped, purchase-order.received, return-goods.received, work-order.completed, master-data.rejected, webhook.test; see "warehouse-ingest help events"\n',
    );
    const invalid = await emit('sales-order.shipped', {
      trackingNumber: '1Z',
      lines: [{ sku: 'A-1', qty: '2' }],
    });
    expect(invalid).toMatchObject({ code: 2, stdout: '' });
    expect(invalid.stderr).toBe(
      'warehouse-ingest: the data is not sales-order.shipped data (docs/event-catalog.md): orderNumber: Required; lines[0].qty: Expected number, received string; see "warehouse-ingest help events"\n',
    );

    const connection = await connect(AMQP_URL);
    try {
      const channel = await connection.createChannel();
      const { queue } = eventsTopology(events);
      expect((await channel.checkQueue(queue)).messageCount).toBe(1);
      const message = await channel.get(queue, { noAck: true });
      if (message === false) throw new Error('The valid event is not in the delivery queue');
      expect(message.properties.messageId).toBe(id);
      expect(message.properties.type).toBe('purchase-order.received');
      expect(JSON.parse(message.content.toString())).toEqual({
        orderNumber: 'PO-9',
        lines: [{ sku: 'A-1', qty: 40 }],
      });
    } finally {
      await connection.close();
    }
    // Three process starts, on a shared machine.
  }, 90_000);
});

describe('a worker given events that break the catalog (real RabbitMQ, real receiver)', () => {
  const open = closedAfterEach();

  it('delivers them anyway and counts each in warehouse_ingest_event_contract_mismatches_total', async () => {
    const receiver = await startWebhookReceiver([SECRET]);
    open.push(receiver);
    const events = testEventsConfig();
    const harness = await startEventsHarness({
      events,
      env: { ACME_SECRET: SECRET },
      tenants: [{ businessId: 'ACME', webhooks: [webhook(receiver.url, 'ACME_SECRET')] }],
    });
    open.push(harness);
    const emit = (type: string, data: Record<string, unknown>) =>
      emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type, data });
    await emit('sales-order.shipped', { orderNumber: 'SO-1' });
    await emit('sales-order.shipped', { trackingNumber: '1Z' });
    await emit('sales-order.cancelled', { orderNumber: 'SO-1' });
    await expect.poll(() => receiver.received.length).toBe(3);
    expect(receiver.received.map((r) => (r.body as { type: string }).type).sort()).toEqual([
      'sales-order.cancelled',
      'sales-order.shipped',
      'sales-order.shipped',
    ]);
    const text = await harness.registry.getSingleMetricAsString(
      'warehouse_ingest_event_contract_mismatches_total',
    );
    expect(text).toContain(
      'warehouse_ingest_event_contract_mismatches_total{type="sales-order.shipped"} 1',
    );
    expect(text).toContain('warehouse_ingest_event_contract_mismatches_total{type="other"} 1');
    expect(text).toContain(
      'warehouse_ingest_event_contract_mismatches_total{type="work-order.completed"} 0',
    );
    expect(await harness.deadCount()).toBe(0);
  });
});
