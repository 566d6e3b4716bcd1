import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createSftpDrop } from '../../src/stores/sftp/index.js';
import type { DropStore } from '../../src/stores/store.js';
import { emitEvent } from '../../src/cli/events/emit.js';
import type { OutboundDrop } from '../../src/events/destinations/file/index.js';
import { AMQP_URL } from '../support/broker.js';
import { closedAfterEach } from '../support/closing.js';
import { startEventsHarness, testEventsConfig } from '../support/events-harness.js';
import { sftpOptionsFor } from '../support/sftp-fixture.js';
import { startSshd } from '../support/sshd.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('outbound-delivery-');
const open = closedAfterEach();

function outboundDrop(
  store: DropStore,
  events: Partial<NonNullable<OutboundDrop['pipeline']['events']>> = {},
): OutboundDrop {
  return {
    pipeline: {
      name: 'acme-orders',
      businessId: 'ACME',
      events: { path: 'outbound', format: 'json', types: ['**'], ...events },
    },
    store,
  };
}

const files = (folder: string) => {
  try {
    return readdirSync(folder).sort();
  } catch {
    return [];
  }
};

async function start(
  drop: OutboundDrop,
  options: { environment?: 'sandbox'; schedule?: number[] } = {},
) {
  const events = testEventsConfig(options.schedule ? { retrySchedule: options.schedule } : {});
  const harness = await startEventsHarness({
    events,
    env: {},
    tenants: [{ businessId: 'ACME', webhooks: [] }],
    drops: [drop],
    ...(options.environment ? { environment: options.environment } : {}),
  });
  open.push(harness);
  const emit = (type: string, data: Record<string, unknown>, id?: string) =>
    emitEvent({ url: AMQP_URL, events, businessId: 'ACME', type, data, ...(id ? { id } : {}) });
  const deliveries = () =>
    harness.registry.getSingleMetricAsString('warehouse_ingest_event_deliveries_total');
  return { harness, emit, deliveries };
}

describe('outbound files delivered by the events consumer (real RabbitMQ)', () => {
  it('writes an emitted event into the drop under its sortable name', async () => {
    const root = path.join(temp.dir, 'json');
    const { harness, emit, deliveries } = await start(
      outboundDrop(createLocalDrop({ path: root })),
    );
    const { id } = await emit('sales-order.shipped', { orderNumber: 'SO-1' }, 'evt-json-1');
    await expect.poll(() => files(path.join(root, 'outbound'))).toHaveLength(1);
    const [name] = files(path.join(root, 'outbound'));
    expect(name).toMatch(/^\d{8}T\d{6}Z-sales-order\.shipped-evt-json-1\.json$/);
    const written = JSON.parse(readFileSync(path.join(root, 'outbound', name!), 'utf8'));
    expect(written).toEqual({
      id,
      type: 'sales-order.shipped',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
      businessId: 'ACME',
      data: { orderNumber: 'SO-1' },
    });
    await expect.poll(deliveries).toContain('outcome="delivered",business="ACME"} 1');
    expect(await harness.deadCount()).toBe(0);
  });

  it('writes CSV rows with the declared columns, and only the declared types', async () => {
    const root = path.join(temp.dir, 'csv');
    const drop = outboundDrop(createLocalDrop({ path: root }), {
      format: 'csv',
      columns: ['$id', '$type', 'orderNumber'],
      types: ['sales-order.*'],
    });
    const { emit, deliveries } = await start(drop);
    await emit('purchase-order.received', { orderNumber: 'PO-9' }, 'evt-po');
    await emit('sales-order.shipped', { orderNumber: 'SO-2' }, 'evt-so');
    await expect.poll(deliveries).toContain('outcome="delivered",business="ACME"} 1');
    await expect.poll(deliveries).toContain('outcome="unsubscribed",business="ACME"} 1');
    const [name, ...more] = files(path.join(root, 'outbound'));
    expect(more).toEqual([]);
    expect(readFileSync(path.join(root, 'outbound', name!), 'utf8')).toBe(
      '$id,$type,orderNumber\r\nevt-so,sales-order.shipped,SO-2\r\n',
    );
  });

  it('retries on the broker through an SFTP outage, then writes the file once the server is back', async () => {
    const sshd = await startSshd();
    open.push({ close: () => sshd.stop() });
    const store = createSftpDrop(sftpOptionsFor(sshd, { timeoutMs: 1_000, readyTimeoutMs: 1_000 }));
    open.push(store);
    const { harness, emit, deliveries } = await start(outboundDrop(store), {
      schedule: [0, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200],
    });
    await sshd.kill();
    await emit('work-order.completed', { workOrder: 'WO-1' }, 'evt-sftp');
    await expect
      .poll(deliveries, { timeout: 15_000 })
      .toMatch(/outcome="retrying",business="ACME"} [1-9]/);
    expect(files(path.join(sshd.dataDir, 'drop', 'outbound'))).toEqual([]);
    await sshd.restart();
    await expect
      .poll(() => files(path.join(sshd.dataDir, 'drop', 'outbound')), { timeout: 20_000 })
      .toEqual([expect.stringMatching(/-work-order\.completed-evt-sftp\.json$/)]);
    await expect.poll(deliveries).toContain('outcome="delivered",business="ACME"} 1');
    expect(await harness.deadCount()).toBe(0);
  });

  it('writes nothing in the sandbox', async () => {
    const root = path.join(temp.dir, 'sandbox');
    const { emit, deliveries } = await start(outboundDrop(createLocalDrop({ path: root })), {
      environment: 'sandbox',
    });
    await emit('sales-order.shipped', { orderNumber: 'SO-3' });
    await expect.poll(deliveries).toContain('outcome="sandbox",business="ACME"} 1');
    expect(files(path.join(root, 'outbound'))).toEqual([]);
  });
});
