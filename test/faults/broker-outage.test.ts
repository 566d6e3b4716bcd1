import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { uniqueName } from '../support/broker.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { startRabbitMqNode, type RabbitMqNode } from '../support/rabbitmq-node.js';
import { retryingClient, type RetryingClient } from '../support/retrying-client.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

/**
 * The real service (config → publisher → HTTP, as `serve` runs it) publishing to a private
 * RabbitMQ node behind a proxy this test cuts. Clients keep posting while connections are cut
 * and the broker is restarted; afterwards the queue must hold every accepted record, and
 * nothing but the records sent, each under one id.
 */
const CLIENTS = 4;
const RECORDS_PER_BATCH = 5;
/**
 * The faults, in order, each once this many further batches were accepted since the last:
 * a plain cut; a cut that also refuses reconnects for a while; a cut followed by a real broker
 * restart (stop, start); a cut in the middle of a frame; a silent network (nothing forwarded,
 * nothing closed) held past the publish timeout; and a last plain cut.
 */
const FAULTS = ['cut', 'cut-refusing', 'restart', 'cut-mid-frame', 'silence', 'cut'] as const;
const ACCEPTED_BETWEEN_FAULTS = 12;
const PUBLISH_TIMEOUT_MS = 3000;
/** How long reconnects are refused after a `cut-refusing`. */
const REFUSE_MS = 300;
const MIN_BATCHES_PER_CLIENT = 10;
/** Hard bound on the load: a client stops here even if the faults are not all done (and the test then fails). */
const MAX_BATCHES_PER_CLIENT = 1000;
const RUN_BUDGET_MS = 100_000;

const DEMO_AUTH = basicAuth(DEMO_WITH_BROKER);
const TEMPLATE = (
  JSON.parse(
    readFileSync(new URL('../../fixtures/sales-orders/valid.json', import.meta.url), 'utf8'),
  ) as Array<Record<string, unknown>>
)[0]!;

/** A record no other batch has: its shipmentId names it (and the queue audit keys on it). */
function record(shipmentId: string): Record<string, unknown> {
  const text = JSON.stringify(TEMPLATE)
    .replaceAll('SO-2026-000187', shipmentId)
    .replaceAll('"ACME"', '"DEMO"');
  return JSON.parse(text) as Record<string, unknown>;
}
const shipmentIdOf = (body: string) =>
  (JSON.parse(body) as { identifiers: { shipmentId: string } }).identifiers.shipmentId;

interface SentBatch {
  readonly shipmentIds: string[];
  messageIds?: string[];
  attempts?: number;
}

describe('broker outage under load', () => {
  let node: RabbitMqNode;
  let proxy: TcpProxy;
  let service: RunningService;
  const queue = uniqueName('faults.q');
  const warnings: string[] = [];

  beforeAll(async () => {
    node = await startRabbitMqNode('faults');
    proxy = await startTcpProxy({ host: '127.0.0.1', port: node.port });
    const temp = tempFolder('broker-outage-');
    mkdirSync(path.join(temp.dir, 'pipelines'));
    const config = temp.write(
      'config.yaml',
      [
        `dataDirectory: ${temp.dir}/data`,
        `pipelinesDirectory: ${temp.dir}/pipelines`,
        'broker:',
        `  exchange: ${uniqueName('faults.x')}`,
        `  queues: [{ name: ${queue}, bindingKeys: ["#"] }]`,
        // Below the clients' 30 s: a batch whose confirms are lost is answered 503, not left hanging.
        `  publishTimeoutMs: ${PUBLISH_TIMEOUT_MS}`,
        '  reconnect: { initialDelayMs: 100, maxDelayMs: 1000 }',
        // This is a test of broker faults, not of abuse limits: the load stays under them.
        'http:',
        '  abuse: { rateLimit: { requests: 100000, windowSeconds: 60 }, maxInFlightBatches: 1000 }',
        await demoTenantYaml(),
      ].join('\n'),
    );
    const log = createLogger({
      level: 'warn',
      destination: { write: (line: string) => void warnings.push(line) },
    });
    service = await startService({
      env: {
        INGEST_ENV: 'development',
        INGEST_CONFIG: config,
        HOST: '127.0.0.1',
        PORT: '0',
        ADMIN_PORT: '0',
        AMQP_URL: proxy.urlFor(node.url),
      },
      log,
    });
    await vi.waitFor(
      async () => expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200),
      {
        timeout: 20_000,
        interval: 100,
      },
    );
  });

  afterAll(async () => {
    await service?.stop();
    await proxy?.close();
    await node?.destroy();
  });

  it(
    'keeps accepting through cuts and a broker restart, loses nothing, and duplicates only under the same ids',
    async () => {
      const deadline = performance.now() + RUN_BUDGET_MS;
      const client: RetryingClient = retryingClient(service.url, DEMO_AUTH);
      const sent: SentBatch[] = [];
      let faultsDone = false;
      const done: string[] = [];
      let restarts = 0;
      /** While the network was silent (after a margin for 202s already on their way): no confirm could arrive. */
      let silentWindow: { from: number; to: number } | undefined;

      async function runClient(c: number): Promise<void> {
        for (
          let n = 0;
          n < MAX_BATCHES_PER_CLIENT && (!faultsDone || n < MIN_BATCHES_PER_CLIENT);
          n++
        ) {
          const batch: SentBatch = {
            shipmentIds: Array.from({ length: RECORDS_PER_BATCH }, (_, i) => `FLT-${c}-${n}-${i}`),
          };
          sent.push(batch);
          const { messageIds, attempts } = await client.post(
            '/api/v2/sales-orders',
            JSON.stringify(batch.shipmentIds.map(record)),
            deadline,
          );
          batch.messageIds = messageIds;
          batch.attempts = attempts;
          // Bounded pacing, so the load spans the whole fault schedule instead of racing ahead of it.
          await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 20));
        }
      }

      async function injectFaults(): Promise<void> {
        try {
          for (const fault of FAULTS) {
            const target = client.stats.accepted + ACCEPTED_BETWEEN_FAULTS;
            await vi.waitFor(
              () =>
                expect(
                  client.stats.accepted,
                  `202s before the fault '${fault}'`,
                ).toBeGreaterThanOrEqual(target),
              { timeout: 30_000, interval: 20 },
            );
            const began = performance.now();
            const connectionsBefore = proxy.accepted;
            if (fault === 'cut') proxy.cut();
            if (fault === 'cut-refusing') {
              proxy.cut({ refuse: true });
              await new Promise((resolve) => setTimeout(resolve, REFUSE_MS)); // bounded: how long the network stays down
              proxy.restore();
            }
            if (fault === 'restart') {
              proxy.cut();
              await node.stop();
              await node.start();
              restarts += 1;
            }
            if (fault === 'cut-mid-frame')
              proxy.cutAfter(1000 + Math.floor(Math.random() * 20_000));
            if (fault === 'silence') {
              proxy.hold();
              const heldAt = performance.now();
              // Held past the publish timeout: batches in flight must be answered 503, none 202.
              await new Promise((resolve) => setTimeout(resolve, PUBLISH_TIMEOUT_MS + 1000));
              silentWindow = { from: heldAt + 1000, to: performance.now() };
              proxy.release();
            }
            // Every fault ends the connection or stalls it; the service then reconnects on its own.
            if (fault !== 'silence') {
              await vi.waitFor(
                () =>
                  expect(
                    proxy.accepted,
                    `a new broker connection after the fault '${fault}'`,
                  ).toBeGreaterThan(connectionsBefore),
                { timeout: 30_000, interval: 20 },
              );
            }
            done.push(`${fault} (${Math.round(performance.now() - began)} ms)`);
          }
        } finally {
          faultsDone = true;
        }
      }

      const started = performance.now();
      await Promise.all([
        injectFaults(),
        ...Array.from({ length: CLIENTS }, (_, c) => runClient(c)),
      ]);
      const loadMs = performance.now() - started;

      // Recovered on its own: a fresh batch is accepted at the first try, with the same service.
      await vi.waitFor(
        async () => expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200),
        { timeout: 20_000, interval: 100 },
      );
      const final: SentBatch = { shipmentIds: ['FLT-final-0'] };
      sent.push(final);
      const finalAnswer = await fetch(`${service.url}/api/v2/sales-orders`, {
        method: 'POST',
        headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(final.shipmentIds.map(record)),
        signal: AbortSignal.timeout(30_000),
      });
      expect(finalAnswer.status).toBe(202);
      final.messageIds = ((await finalAnswer.json()) as { messageIds: string[] }).messageIds;

      const audit = auditQueue(await drainQueue(node.url, queue), shipmentIdOf);
      const acceptedRecords = sent.reduce((sum, b) => sum + (b.messageIds?.length ?? 0), 0);
      console.log(
        `[faults] broker outage: ${loadMs.toFixed(0)} ms of load, faults ${done.join(', ')} (${restarts} broker restart); ` +
          `batches sent ${client.stats.batches + 1}, 202s ${client.stats.accepted + 1}, 503s ${client.stats.unavailable}, ` +
          `retries ${client.stats.retries} (${client.stats.retriedBatches} batches retried), no answer ${client.stats.networkErrors}, other 5xx ${client.stats.otherServerErrors}; ` +
          `records accepted ${acceptedRecords}, records in the queue ${audit.messages} (${audit.distinctIds} distinct ids), duplicates ${audit.duplicates}`,
      );

      // The faults really happened, and really hit the clients.
      expect(done.map((d) => d.split(' ')[0])).toEqual(FAULTS);
      expect(restarts).toBe(1);
      // No 202 while the broker could not confirm anything.
      expect(silentWindow).toBeDefined();
      const inSilence = (t: number) => t > silentWindow!.from && t < silentWindow!.to;
      expect(client.stats.acceptedAt.filter(inSilence)).toEqual([]);
      expect(
        client.stats.unavailableAt.filter(inSilence).length,
        'batches in flight timed out with 503',
      ).toBeGreaterThan(0);
      expect(client.stats.unavailable).toBeGreaterThan(0);
      expect(client.stats.otherServerErrors).toBe(0);

      // Every batch was in the end answered 202 (retried ones included), with one id per record.
      for (const batch of sent)
        expect(batch.messageIds, `batch ${batch.shipmentIds[0]}`).toHaveLength(
          batch.shipmentIds.length,
        );
      // Every accepted record is in the queue, under the id the 202 gave it, with that record's content:
      // a 202 was only given for records the broker had taken durably (they outlived the restart).
      const missing: string[] = [];
      for (const batch of sent) {
        batch.messageIds!.forEach((id, i) => {
          const body = audit.bodyOf.get(id);
          if (body === undefined || shipmentIdOf(body) !== batch.shipmentIds[i])
            missing.push(`${batch.shipmentIds[i]} (${id})`);
        });
      }
      expect(missing, 'accepted records missing from the queue').toEqual([]);
      // Nothing in the queue that was not accepted, and each record under exactly one id.
      expect(audit.distinctIds).toBe(acceptedRecords);
      expect(audit.recordsUnderSeveralIds).toEqual([]);
      expect(audit.idsWithDifferentBodies).toEqual([]);
    },
    RUN_BUDGET_MS + 40_000,
  );
});
