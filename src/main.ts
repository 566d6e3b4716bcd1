import { loadConfig, type Config, type LoadConfigOptions } from './config.js';
import { ConfigError } from './errors.js';
import { openDrops, startDropRunners } from './drops/open.js';
import { openEvents } from './events/index.js';
import { resolveEndpoints } from './events/subscriptions.js';
import { buildHttpApp } from './http/build.js';
import { createHttpServer, listen, type HttpServer } from './http/server.js';
import { openLineageJournal } from './lineage/journal.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { configuredIngest } from './pipeline/configured.js';
import { createPublisher } from './publish/index.js';
import type { Publisher } from './publish/publisher.js';
import { stopGracefully, type InFlight } from './shutdown.js';
import { logStarted, serveProblems, warnAboutPipelinesFolder } from './start-up.js';

export interface RunningService {
  readonly config: Readonly<Config>;
  readonly url: string;
  /** The admin listener: /metrics, /readyz, /healthz. */
  readonly adminUrl: string;
  readonly publisher: Publisher;
  stop(): Promise<void>;
}

export interface StartOptions extends LoadConfigOptions {
  /** Tests pass their own logger; otherwise one is made from config. */
  log?: Logger;
}

/**
 * Composition root: config → checks → publisher → HTTP (bound before any drop is touched, so a
 * port in use stops the start instead of leaving drops processed by a service nobody can reach)
 * → events consumer and drop runners → one start-up line → stop.
 */
export async function startService(options: StartOptions = {}): Promise<RunningService> {
  const config = loadConfig(options);
  const log = options.log ?? createLogger({ level: config.log.level, format: config.log.format });
  const refused = serveProblems(config);
  if (refused.length > 0) throw new ConfigError(refused);
  warnAboutPipelinesFolder(config, log);
  // Pipeline files and their secrets are read before anything connects: a bad one stops start-up cleanly.
  const stores = openDrops(config);
  const endpoints = resolveEndpoints(config);
  const publisher = createPublisher(config, log);
  await publisher.start();

  const metrics = createMetrics({
    businesses: config.tenants.map((t) => t.businessId),
    processMetrics: true,
  });
  let stopping: Promise<void> | undefined;
  const lineage = openLineageJournal(config, log, metrics);
  const { app, admin } = buildHttpApp(config, publisher, log, {
    metrics,
    drops: stores,
    lineage,
    stopping: () => stopping !== undefined,
  });
  const server = createHttpServer(app, config.http, log);
  const adminServer = createHttpServer(admin, config.http, log);
  const closeAll = async () => {
    await Promise.allSettled([
      closeServer(server),
      closeServer(adminServer),
      ...stores.map(({ store }) => store.close()),
      publisher.close(),
      lineage?.flush(),
    ]);
  };
  let url: string;
  let adminUrl: string;
  try {
    url = await listen(server, config.http.host, config.http.port);
    adminUrl = await listen(adminServer, config.admin.host, config.admin.port);
  } catch (error) {
    await closeAll();
    throw error;
  }
  const events = openEvents(config, endpoints, log, metrics.registry);
  try {
    await events?.start();
  } catch (error) {
    await Promise.allSettled([events?.close(), closeAll()]);
    throw error;
  }
  const drops = startDropRunners(
    config,
    stores,
    configuredIngest(config, publisher, metrics),
    log,
    metrics,
  );
  logStarted(log, {
    config,
    publisher,
    pipelines: stores.map((d) => d.pipeline.name),
    url,
    adminUrl,
  });

  let draining: ReturnType<typeof server.drain> | undefined;
  const http: InFlight = {
    name: 'http',
    stop: () => (draining = server.drain()).closed,
    interrupt: () => draining?.force(),
  };
  const adminListener = { name: 'admin listener', close: () => closeServer(adminServer) };
  return {
    config,
    url,
    adminUrl,
    publisher,
    // Requests answered 503 and connections refused from here; see docs/operations.md#stopping-sigterm-sigint.
    stop: () =>
      (stopping ??= stopGracefully({
        graceMs: config.shutdown.graceMs,
        log,
        work: [http, drops],
        // The admin listener last but one: /readyz says 503 (stopping) while work drains.
        close: [
          drops.stores,
          ...(events ? [{ name: 'events', close: () => events.close() }] : []),
          adminListener,
          publisher,
          ...(lineage ? [{ name: 'lineage journal', close: () => lineage.flush() }] : []),
        ],
      })),
  };
}

function closeServer(server: HttpServer): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const { closed, force } = server.drain();
  force();
  return closed;
}
