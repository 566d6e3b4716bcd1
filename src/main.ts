import { loadConfig, spoolDirectory, type Config, type LoadConfigOptions } from './config.js';
import { startDropRunners } from './drops/open.js';
import { sweepAbandoned } from './drops/spool.js';
import { openEvents } from './events/index.js';
import { resolveEndpoints } from './events/subscriptions.js';
import { buildHttpApp } from './http/build.js';
import { createHttpServer, listen, type HttpServer } from './http/server.js';
import { openHistory } from './history/index.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { configuredIngest } from './ingest/configured.js';
import { createPublisher } from './publish/index.js';
import { createReloader } from './reload.js';
import type { Publisher } from './publish/publisher.js';
import { openSharedState } from './http-state/index.js';
import { preparePortal } from './portal/index.js';
import { createOperatorActions } from './operator-actions.js';
import { createOperatorCheck } from './portal/operator-credentials.js';
import { createPasswordHasher } from './portal/password-hasher.js';
import { createSignInGate } from './portal/sign-in-gate.js';
import { mountPortal } from './portal/routes.js';
import { createSessionStore } from './portal/sessions.js';
import { stopGracefully, type InFlight } from './shutdown.js';
import {
  logStarted,
  openCheckedDrops,
  serveProblems,
  warnAboutDescriptorLimit,
  warnAboutPipelinesFolder,
} from './start-up.js';

export interface RunningService {
  readonly config: Readonly<Config>;
  readonly url: string;
  /** The admin listener: /metrics, /readyz, /healthz. */
  readonly adminUrl: string;
  readonly publisher: Publisher;
  /** Reads the configuration again (what SIGHUP does); false when the new one was refused. */
  reload(): boolean;
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
  // Counted from the first line on; reported once the metrics exist.
  let droppedLogLines = 0;
  const log =
    options.log ??
    createLogger({
      level: config.log.level,
      format: config.log.format,
      onDrop: () => void droppedLogLines++,
    });
  warnAboutPipelinesFolder(config, log);
  warnAboutDescriptorLimit(config, log);
  // What serve refuses and every pipeline's problems (files, secrets) in one error, before anything connects.
  const stores = openCheckedDrops(config);
  const endpoints = resolveEndpoints(config);
  const portal = preparePortal(config, options.env ?? process.env);
  const publisher = createPublisher(config, log);
  await publisher.start();
  let sharedState: Awaited<ReturnType<typeof openSharedState>>;
  try {
    sharedState = await openSharedState(config, log);
  } catch (error) {
    await publisher.close();
    throw error;
  }

  const metrics = createMetrics({
    businesses: config.tenants.map((t) => t.businessId),
    pipelines: stores.map((d) => d.pipeline.name),
    processMetrics: true,
    droppedLogLines: () => droppedLogLines,
  });
  let stopping: Promise<void> | undefined;
  // The profiles in force: a reload (SIGHUP) swaps them; each batch reads them when it begins.
  let onboarding = config.onboarding;
  // Opened by its writer's first write: start-up never waits for the history (PostgreSQL may be away).
  const history = openHistory(config, log, metrics.registry);
  // Scratch files a killed process of this host left (a large CSV body's spooled records, a drop's copy).
  await sweepAbandoned(spoolDirectory(config));
  // Made before the HTTP app (which offers its actions to partners), started once it listens.
  const events = openEvents(config, endpoints, log, metrics.registry, stores, history);
  let tenantIds = new Set(config.tenants.map((t) => t.businessId));
  // The portal's operators in force: a reload swaps them; every sign-in and page reads them.
  let operators = config.portal.operators;
  // Operators' passwords are hashed on a thread of their own, never on libuv's pool (issue 38).
  const passwordHasher = createPasswordHasher();
  // Started after the HTTP listener; the portal's Reprocess asks them once they run.
  let drops: ReturnType<typeof startDropRunners> | undefined;
  const { app, admin, authenticator, limits } = buildHttpApp(config, publisher, log, {
    metrics,
    drops: stores,
    ...(history && { history: history.writer, historyStore: history.store }),
    ...(events && { events: events.actions }),
    sharedState,
    stopping: () => stopping !== undefined,
    onboarding: () => onboarding,
  });
  if (portal)
    mountPortal(app, {
      ...portal,
      sessions: createSessionStore({
        ttlMs: config.portal.sessionTtlMs,
        values: sharedState.values,
      }),
      claims: sharedState.claims,
      // Read at each sign-in and page: a reload that removes a tenant ends its sessions.
      isTenant: (businessId) => config.environment === 'sandbox' || tenantIds.has(businessId),
      ...(history && { history: history.store }),
      retentionDays: config.history.retentionDays.batches,
      // The same actions the partner API has: the portal's buttons do what its POSTs do, within the same limits.
      ...(events && { events: events.actions, limits }),
      checkOperator: createOperatorCheck({
        operators: () => operators,
        gate: createSignInGate(sharedState, config.portal.signInLimits),
        hasher: passwordHasher,
      }),
      // Asked at every page: a reload (or a restart) without an operator ends its sessions.
      isOperator: (name) => operators.some((o) => o.name === name),
      trustProxyHops: config.http.trustProxyHops,
      operatorActions: createOperatorActions({
        config,
        drops: stores,
        runner: (pipeline) => drops?.runner(pipeline),
        ...(events && { endpoints: (businessId: string) => events.actions.endpoints(businessId) }),
      }),
      businesses: () => [...tenantIds].sort(),
      log,
    });
  let server: HttpServer;
  try {
    server = createHttpServer(app, { ...config.http, listener: 'public' }, { log, metrics });
  } catch (error) {
    await Promise.allSettled([events?.close(), publisher.close(), sharedState.close()]);
    throw error;
  }
  // The admin listener stays plain HTTP on loopback, whatever the partner-facing port serves.
  const adminServer = createHttpServer(
    admin,
    {
      ...config.http,
      listener: 'admin',
      maxConnections: config.admin.maxConnections,
      tls: undefined,
    },
    { log, metrics },
  );
  const closeAll = async () => {
    await Promise.allSettled([
      sharedState.close(),
      closeServer(server),
      closeServer(adminServer),
      ...stores.map(({ store }) => store.close()),
      publisher.close(),
      history?.close(),
    ]);
  };
  let url: string;
  let adminUrl: string;
  try {
    url = await listen(server, config.http.host, config.http.port);
    adminUrl = await listen(adminServer, config.admin.host, config.admin.port);
  } catch (error) {
    await Promise.allSettled([events?.close(), closeAll()]);
    throw error;
  }
  try {
    await events?.start();
  } catch (error) {
    await Promise.allSettled([events?.close(), closeAll()]);
    throw error;
  }
  drops = startDropRunners(
    config,
    stores,
    configuredIngest(config, publisher, metrics, history?.ends),
    log,
    metrics,
    () => onboarding,
  );
  const reloader = createReloader({
    config,
    load: () => loadConfig(options),
    check: serveProblems,
    log,
    parts: [
      {
        name: 'tenants',
        prepare: (next) => () => {
          authenticator.setTenants(next.tenants);
          tenantIds = new Set(next.tenants.map((t) => t.businessId));
        },
      },
      { name: 'onboarding', prepare: (next) => () => void (onboarding = next.onboarding) },
      {
        name: 'portal operators',
        prepare: (next) => () => void (operators = next.portal.operators),
      },
      {
        // The files are read again at every reload (a renewed certificate keeps its path); a pair
        // that cannot be read or does not match refuses the reload and the served one stays.
        name: 'certificate',
        prepare(next) {
          const files = next.http.tls;
          if (!server.prepareTlsReload || !files) return () => undefined;
          const { apply, certificate } = server.prepareTlsReload(files);
          return () => {
            apply();
            log.info({ certificate }, 'TLS certificate reloaded: new connections get it');
          };
        },
      },
      {
        name: 'webhooks',
        prepare(next) {
          const resolved = resolveEndpoints(next); // reads secret files: may refuse the reload
          return () => events?.setWebhooks(resolved);
        },
      },
    ],
  });
  // Node's default for SIGHUP ends the process: while stopping, it is received and ignored.
  const onHangup = () =>
    stopping ? log.warn('SIGHUP while stopping: no reload') : void reloader.reload();
  process.on('SIGHUP', onHangup);
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
    reload: () => reloader.reload(),
    // Requests answered 503 and connections refused from here; see docs/operations.md#stopping-sigterm-sigint.
    stop: () =>
      (stopping ??= stopGracefully({
        graceMs: config.shutdown.graceMs,
        log,
        work: [http, drops],
        // The admin listener last but one: /readyz says 503 (stopping) while work drains.
        // Events before the drop stores: an outbound file being written finishes in its store.
        close: [
          ...(events ? [{ name: 'events', close: () => events.close() }] : []),
          drops.stores,
          adminListener,
          publisher,
          { name: 'shared state', close: () => sharedState.close() },
          { name: 'password hasher', close: () => passwordHasher.close() },
          ...(history ? [{ name: 'history', close: () => history.close() }] : []),
          { name: 'reload on SIGHUP', close: async () => void process.off('SIGHUP', onHangup) },
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
