import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { BatchEnds } from '../../src/ingest/batch-end.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { createDropRunner, type DropRunner } from '../../src/drops/runner.js';
import type { DropStore } from '../../src/stores/store.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';
import { validRecords } from '../records/fixtures.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from './broker.js';

/** A v1 CSV of `orders` DEMO orders (two lines each, one record per order); `tag` makes it unique. */
export const demoOrdersCsv = (tag: string, orders: number) =>
  ordersCsv(tag, orders).replaceAll('ACME,', 'DEMO,');
/** `count` distinct DEMO sales orders, as a v2 JSON array written one record per line; `tag` makes them unique. */
export function demoOrdersJson(count: number, tag: string): string {
  const template = JSON.stringify(validRecords('sales-orders')[0]).replaceAll('"ACME"', '"DEMO"');
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const record = JSON.parse(template) as { identifiers: { shipmentId: string } };
    record.identifiers.shipmentId = `${tag}-${i}`;
    lines.push(JSON.stringify(record));
  }
  return `[\n${lines.join(',\n')}\n]\n`;
}
/** The record a message body holds, by its shipmentId (the CSV's OrdNumber). */
export const shipmentIdOf = (body: string) =>
  (JSON.parse(body) as { identifiers: { shipmentId: string } }).identifiers.shipmentId;

/**
 * A drop runner as `run` builds it — real store, real ingest, a real RabbitMQ publisher on a
 * fresh test exchange and queue — for fault tests that need to reach into the flow (a tapped
 * store) and so run it in this process. DEMO's development onboarding profile completes the orders.
 */
export interface DropHarness {
  readonly runner: DropRunner;
  readonly topology: TestTopology;
  readonly publisher: RabbitMqPublisher;
  /** The runner's warnings and errors, as logged (they say why a file was retried); more with `logLevel`. */
  readonly warnings: string[];
  /** The local folder for copies of files being processed (the try's scratch files). */
  readonly spoolDirectory: string;
  close(): Promise<void>;
}

export async function startDropHarness(
  store: DropStore,
  pipelineName: string,
  /** Pipeline fields to set, e.g. `{ format: 'v2-json' }` or `retry` (parsed with the rest). */
  overrides: Record<string, unknown> = {},
  /**
   * `halvesFromBytes` for the runner; `logLevel`: what `warnings` collects (@default 'warn');
   * `ends`: the one end of every batch the ingest tells (@default none).
   */
  options: {
    halvesFromBytes?: number;
    logLevel?: 'debug' | 'info' | 'warn';
    ends?: BatchEnds;
  } = {},
): Promise<DropHarness> {
  const warnings: string[] = [];
  const log = createLogger({
    level: options.logLevel ?? 'warn',
    destination: { write: (line: string) => void warnings.push(line) },
  });
  const topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'faults' });
  const publisher = createRabbitMqPublisher(
    {
      url: AMQP_URL,
      exchange: topology.exchange,
      queues: [],
      publishTimeoutMs: 15_000,
      reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
    },
    log,
  );
  await publisher.start();
  const pipeline = pipelineSchema.parse({
    name: pipelineName,
    businessId: 'DEMO',
    kind: 'sales-orders',
    format: 'v1-csv',
    source: { type: 'local', path: '/unused' }, // the store is handed in below
    readiness: { strategy: 'rename' },
    claimLeaseMs: 10_000, // the shortest allowed: a claim a failure left behind is taken over soon
    ...overrides,
  });
  const spoolDirectory = mkdtempSync(path.join(tmpdir(), 'faults-spool-'));
  const { onboarding } = loadConfig({ env: { INGEST_ENV: 'development' } });
  const runner = createDropRunner({
    pipeline,
    store,
    ingest: createIngest({
      publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
      ...(options.ends && { ends: options.ends }),
    }),
    onboarding,
    log,
    spoolDirectory,
    workerId: 'faults',
    ...(options.halvesFromBytes !== undefined && { halvesFromBytes: options.halvesFromBytes }),
  });
  return {
    runner,
    topology,
    publisher,
    warnings,
    spoolDirectory,
    async close() {
      await runner.stop();
      await publisher.close();
      await topology.cleanup();
      rmSync(spoolDirectory, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` and says how long it took; a rejection is returned as the outcome, for the test to judge. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ outcome: T | Error; ms: number }> {
  const began = performance.now();
  const outcome = await fn().catch((error: unknown) => error as Error);
  return { outcome, ms: Math.round(performance.now() - began) };
}
