import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { uniqueName } from './broker.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from './http-app.js';
import type { ClusterInfo } from './rabbit-cluster.js';
import { retryingClient, type RetryingClient } from './retrying-client.js';
import { tempFolder } from './temp.js';

/**
 * The real service (as `serve` runs it) given all three nodes of the fleet cluster, and an HTTP
 * load of clients that retry each batch until it is answered 202, as the README asks of one.
 */
export interface FleetService {
  readonly service: RunningService;
  readonly queue: string;
  /** The service's own folder (data, pipelines). */
  readonly dir: string;
  /** Log lines at info and above, as written. */
  readonly lines: string[];
  /** The node (`host:port`) `/readyz` names, once ready. */
  node(): Promise<string>;
}

export async function startFleetService(
  cluster: ClusterInfo,
  /** Pipeline files to write into the service's pipelines folder, by name, given that folder's parent. */
  pipelines: (dir: string) => Record<string, string> = () => ({}),
): Promise<FleetService> {
  const queue = uniqueName('fleet.q');
  const temp = tempFolder('fleet-');
  mkdirSync(path.join(temp.dir, 'pipelines'), { recursive: true });
  for (const [name, yaml] of Object.entries(pipelines(temp.dir)))
    temp.write(path.join('pipelines', name), yaml);
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${temp.dir}/pipelines`,
      'broker:',
      `  exchange: ${uniqueName('fleet.x')}`,
      `  queues: [{ name: ${queue}, bindingKeys: ["#"] }]`, // quorum: the default
      '  publishTimeoutMs: 5000',
      '  reconnect: { initialDelayMs: 100, maxDelayMs: 1000 }',
      'http:',
      '  abuse: { rateLimit: { requests: 1000000, windowSeconds: 60 }, maxInFlightBatches: 1000 }',
      await demoTenantYaml(),
    ].join('\n'),
  );
  const lines: string[] = [];
  const service = await startService({
    env: {
      INGEST_ENV: 'development',
      INGEST_CONFIG: config,
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_PORT: '0',
      AMQP_URL: cluster.nodes.map((n) => n.url).join(','),
    },
    log: createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(line) },
    }),
  });
  async function node(): Promise<string> {
    let found = '';
    await vi.waitFor(
      async () => {
        const response = await fetch(`${service.adminUrl}/readyz`);
        expect(response.status).toBe(200);
        found = ((await response.json()) as { broker: { node: string } }).broker.node;
      },
      { timeout: 60_000, interval: 100 },
    );
    return found;
  }
  return { service, queue, dir: temp.dir, lines, node };
}

const TEMPLATE = (
  JSON.parse(
    readFileSync(new URL('../../fixtures/sales-orders/valid.json', import.meta.url), 'utf8'),
  ) as Array<Record<string, unknown>>
)[0]!;
const TEMPLATE_TEXT = JSON.stringify(TEMPLATE).replaceAll('"ACME"', '"DEMO"');

/** A sales order no other batch has: its shipmentId names it (the queue audit keys on it). */
export function fleetRecord(shipmentId: string): string {
  return TEMPLATE_TEXT.replaceAll('SO-2026-000187', shipmentId);
}
export const shipmentIdOf = (body: string) =>
  (JSON.parse(body) as { identifiers: { shipmentId: string } }).identifiers.shipmentId;

export interface SentBatch {
  readonly shipmentIds: string[];
  messageIds?: string[];
}

export interface HttpLoad {
  readonly client: RetryingClient;
  readonly sent: SentBatch[];
  /** Tells the clients to finish the batch they are on and stop; resolves when they have. */
  stop(): Promise<void>;
  /** The longest time between two consecutive 202s (any client), from the first to the last, in ms. */
  longestGapMs(): number;
}

/**
 * `clients` clients posting `recordsPerBatch`-record batches back to back, each batch retried
 * until 202 (no batch may give up before `budgetMs`).
 */
export function startHttpLoad(
  service: RunningService,
  options: { clients: number; recordsPerBatch: number; budgetMs: number; tag: string },
): HttpLoad {
  const client = retryingClient(service.url, basicAuth(DEMO_WITH_BROKER), 50);
  const sent: SentBatch[] = [];
  const deadline = performance.now() + options.budgetMs;
  let stopping = false;
  async function run(c: number): Promise<void> {
    for (let n = 0; !stopping; n++) {
      const batch: SentBatch = {
        shipmentIds: Array.from(
          { length: options.recordsPerBatch },
          (_, i) => `${options.tag}-${c}-${n}-${i}`,
        ),
      };
      sent.push(batch);
      const body = `[${batch.shipmentIds.map(fleetRecord).join(',')}]`;
      batch.messageIds = (await client.post('/api/v2/sales-orders', body, deadline)).messageIds;
    }
  }
  const running = Promise.all(Array.from({ length: options.clients }, (_, c) => run(c)));
  return {
    client,
    sent,
    async stop() {
      stopping = true;
      await running;
    },
    longestGapMs() {
      const times = [...client.stats.acceptedAt].sort((a, b) => a - b);
      let longest = 0;
      for (let i = 1; i < times.length; i++) longest = Math.max(longest, times[i]! - times[i - 1]!);
      return longest;
    },
  };
}

/** Waits until `load` has `count` more 202s than it has now. */
export async function acceptedMore(load: HttpLoad, count: number, timeoutMs = 60_000) {
  const target = load.client.stats.accepted + count;
  await vi.waitFor(
    () => expect(load.client.stats.accepted, '202s').toBeGreaterThanOrEqual(target),
    { timeout: timeoutMs, interval: 20 },
  );
}
