import type { AddressInfo } from 'node:net';
import { loadConfig, type Config, type LoadConfigOptions } from './config.js';
import { openDrops, startDropRunners } from './drops/open.js';
import { openEvents } from './events/index.js';
import { resolveEndpoints } from './events/subscriptions.js';
import { buildHttpApp } from './http/build.js';
import { createHttpServer } from './http/server.js';
import { openLineageJournal } from './lineage/journal.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { configuredIngest } from './pipeline/configured.js';
import { createPublisher } from './publish/index.js';
import type { Publisher } from './publish/publisher.js';
import { stopGracefully, type InFlight } from './shutdown.js';

export interface RunningService {
  readonly config: Readonly<Config>;
  readonly url: string;
  readonly publisher: Publisher;
  stop(): Promise<void>;
}

export interface StartOptions extends LoadConfigOptions {
  /** Tests pass their own logger; otherwise one is made from config. */
  log?: Logger;
}

/** Composition root: config → publisher → drops → HTTP → stop. Nothing imports this module's parts back. */
export async function startService(options: StartOptions = {}): Promise<RunningService> {
  const config = loadConfig(options);
  const log = options.log ?? createLogger({ level: config.log.level });
  // Pipeline files and their secrets are read before anything connects: a bad one stops start-up cleanly.
  const stores = openDrops(config);
  const endpoints = resolveEndpoints(config);
  const publisher = createPublisher(config, log);
  await publisher.start();
  log.info(
    { environment: config.environment, publisher: publisher.name, target: publisher.target },
    `publisher: ${publisher.name} (${publisher.target})`,
  );

  const metrics = createMetrics({
    businesses: config.tenants.map((t) => t.businessId),
    processMetrics: true,
  });
  const events = openEvents(config, endpoints, log, metrics.registry);
  await events?.start();
  let stopping: Promise<void> | undefined;
  const lineage = openLineageJournal(config, log, metrics);
  const app = buildHttpApp(config, publisher, log, {
    metrics,
    drops: stores,
    lineage,
    stopping: () => stopping !== undefined,
  });
  const drops = startDropRunners(
    config,
    stores,
    configuredIngest(config, publisher, metrics),
    log,
    metrics,
  );

  const server = createHttpServer(app, config.http, log);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.http.port, config.http.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host =
    config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log.info({ url, environment: config.environment }, `listening on ${url}`);

  let draining: ReturnType<typeof server.drain> | undefined;
  const http: InFlight = {
    name: 'http',
    stop: () => (draining = server.drain()).closed,
    interrupt: () => draining?.force(),
  };
  return {
    config,
    url,
    publisher,
    // Requests answered 503 and connections refused from here; see docs/operations.md#stopping-sigterm-sigint.
    stop: () =>
      (stopping ??= stopGracefully({
        graceMs: config.shutdown.graceMs,
        log,
        work: [http, drops],
        close: [
          drops.stores,
          ...(events ? [{ name: 'events', close: () => events.close() }] : []),
          publisher,
          ...(lineage ? [{ name: 'lineage journal', close: () => lineage.flush() }] : []),
        ],
      })),
  };
}
