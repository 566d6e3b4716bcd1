import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { H3 } from 'h3';
import { lineageDirectory, loadConfig, type Config, type LoadConfigOptions } from './config.js';
import { createLineageJournal, type LineageJournal } from './lineage/journal.js';
import { createLogger, safeUrl, type Logger } from './log.js';
import { createAuthenticator } from './http/auth.js';
import { createHttpApp } from './http/app.js';
import { createAdmission } from './http/admission.js';
import { createAuthThrottle } from './http/auth-throttle.js';
import { createIdempotencyStore } from './http/idempotency.js';
import { createRateLimiter } from './http/rate-limit.js';
import { createHttpServer } from './http/server.js';
import { withBulkhead } from './pipeline/bulkhead.js';
import { createIngest, type Ingest } from './pipeline/ingest.js';
import { compileRoutingKey, templateFields, topicMatches } from './pipeline/route.js';
import { createEmbeddedPublisher, createNonePublisher, createRabbitMqPublisher } from './publish/index.js';
import type { Publisher, ReadinessCheck } from './publish/publisher.js';
import { KIND_NAMES } from './records/kind.js';
import { loadPipelineFiles, loadPipelines, type LoadedPipeline } from './drops/definition.js';
import { createDropRunner, type DropRunner, type RunSummary } from './drops/runner.js';
import { createRabbitMqLease, OWN_LEASE } from './drops/lease.js';
import { createDropStore } from './drops/stores/index.js';
import type { DropStore } from './drops/stores/store.js';
import { probeDrops, type DropCheck } from './drops/probe.js';
import { createMetrics, type Metrics } from './metrics.js';
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

/** Composition root: config → publisher → pipeline → HTTP. */
export async function startService(options: StartOptions = {}): Promise<RunningService> {
  const config = loadConfig(options);
  const log = options.log ?? createLogger({ level: config.log.level });
  // Pipeline files and their secrets are read before anything connects: a bad one stops start-up cleanly.
  const stores = openDrops(config);
  const publisher = choosePublisher(config, log);
  await publisher.start();
  log.info({ environment: config.environment, publisher: publisher.name, target: publisher.target }, `publisher: ${publisher.name} (${publisher.target})`);

  const metrics = createMetrics({ businesses: config.tenants.map((t) => t.businessId), processMetrics: true });
  let stopping: Promise<void> | undefined;
  const lineage = openLineageJournal(config, log, metrics);
  const app = buildHttpApp(config, publisher, log, { metrics, drops: stores, lineage, stopping: () => stopping !== undefined });
  const drops = startDropRunners(config, stores, pipelineIngest(config, publisher, metrics), log, metrics);

  const server = createHttpServer(app, config.http, log);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.http.port, config.http.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
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
    // Requests answered 503 and connections refused from here; see README "Stopping".
    stop: () =>
      (stopping ??= stopGracefully({
        graceMs: config.shutdown.graceMs,
        log,
        work: [http, drops],
        close: [drops.stores, publisher, ...(lineage ? [{ name: 'lineage journal', close: () => lineage.flush() }] : [])],
      })),
  };
}

export interface HttpAppParts {
  /** @default a fresh set, on its own registry */
  readonly metrics?: Metrics;
  /** The drops `/readyz` lists. @default none */
  readonly drops?: readonly OpenedDrop[];
  /** The HTTP lineage journal. @default one over `lineage.directory` (none in the sandbox) */
  readonly lineage?: LineageJournal;
  /** True once the service is stopping: new requests are answered 503. @default never */
  readonly stopping?: () => boolean;
}

/** The HTTP facade over the shared pipeline; tests build it the same way, without a socket. */
export function buildHttpApp(config: Readonly<Config>, publisher: Publisher, log: Logger, parts: HttpAppParts = {}): H3 {
  const sandbox = config.environment === 'sandbox';
  const { abuse } = config.http;
  const metrics = parts.metrics ?? createMetrics({ businesses: config.tenants.map((t) => t.businessId) });
  metrics.watchBroker(publisher);
  const drops = parts.drops ?? [];
  const lineage = parts.lineage ?? openLineageJournal(config, log, metrics);
  return createHttpApp({
    ingest: withBulkhead(pipelineIngest(config, publisher, metrics), { maxInFlight: abuse.maxInFlightBatches }),
    metrics: metrics.registry,
    admission: createAdmission({
      authenticator: createAuthenticator({ tenants: config.tenants, acceptAnyCredentials: sandbox }),
      throttle: createAuthThrottle(abuse.authThrottle),
      rateLimiter: createRateLimiter(abuse.rateLimit),
      trustProxyHops: config.http.trustProxyHops,
    }),
    idempotency: createIdempotencyStore(abuse.idempotency),
    log,
    stopping: parts.stopping,
    bodyLimitBytes: config.http.bodyLimitBytes,
    maxRecordsPerBatch: config.http.maxRecordsPerBatch,
    onboarding: config.onboarding,
    responseHeaders: sandbox ? { 'ingest-environment': 'sandbox' } : {},
    ...(lineage && { lineage }),
    readiness: async () => {
      const [check, dropChecks] = await Promise.all([readiness(config, publisher), probeDrops(drops.map(({ pipeline, store }) => ({ pipeline: pipeline.name, store })))]);
      return withDrops(check, dropChecks);
    },
  });
}

/** The HTTP lineage journal; none in the sandbox, which publishes nothing to trace. */
function openLineageJournal(config: Readonly<Config>, log: Logger, metrics: Metrics): LineageJournal | undefined {
  if (config.environment === 'sandbox') return undefined;
  return createLineageJournal(
    { directory: lineageDirectory(config), retentionDays: config.lineage.retentionDays, onWriteFailure: (records) => metrics.lineageLost(records) },
    log.child({ component: 'lineage' }),
  );
}

/** The one pipeline every source feeds, counted in `metrics` when given. */
export function pipelineIngest(config: Readonly<Config>, publisher: Publisher, metrics?: Metrics) {
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  if (!metrics) return createIngest({ publisher, routingKeyFor });
  return createIngest({ publisher: metrics.timed(publisher), routingKeyFor, observer: metrics.observeBatch });
}

function withDrops(check: ReadinessCheck, drops: readonly DropCheck[]): ReadinessCheck & { drops: readonly DropCheck[] } {
  const unreachable = drops.filter((d) => !d.reachable).map((d) => `drop "${d.pipeline}" (${d.source}) is not reachable: ${d.problem ?? 'unknown'}`);
  return { ready: check.ready && unreachable.length === 0, problems: [...check.problems, ...unreachable], drops };
}

export interface OpenedDrop {
  readonly pipeline: LoadedPipeline;
  readonly store: DropStore;
}

/**
 * Every pipeline in `pipelinesDirectory` with its store, as start-up (and `lint`) reads them:
 * throws `ConfigError` naming file and field. Stores connect lazily; close them when done.
 */
export function openDrops(config: Readonly<Config>): OpenedDrop[] {
  const pipelines = loadPipelines(path.resolve(config.pipelinesDirectory), { tenants: config.tenants.map((t) => t.businessId) });
  const opened: OpenedDrop[] = [];
  try {
    for (const pipeline of pipelines) opened.push({ pipeline, store: createDropStore(pipeline, pipeline.file) });
  } catch (error) {
    void Promise.all(opened.map(({ store }) => store.close().catch(() => undefined)));
    throw error;
  }
  return opened;
}

/**
 * `warehouse-ingest run <pipeline file>`: one drop, without the HTTP facade. With `once`, looks
 * until nothing is settling, processes every ready file and resolves with what it did; it
 * rejects only when the drop itself cannot be read (an invalid file is a failure receipt).
 */
export async function runPipelineFile(
  file: string,
  options: StartOptions & { once: boolean; /** Aborted on SIGTERM/SIGINT: `--once` stops as `run` does. */ stopSignal?: AbortSignal },
): Promise<{ summary?: RunSummary; stop(): Promise<void> }> {
  const config = loadConfig(options);
  const log = options.log ?? createLogger({ level: config.log.level });
  const [pipeline] = loadPipelineFiles([path.resolve(file)], { tenants: config.tenants.map((t) => t.businessId) });
  const store = createDropStore(pipeline!, pipeline!.file);
  const publisher = choosePublisher(config, log);
  await publisher.start();
  const runner = createPipelineRunner(config, { pipeline: pipeline!, store }, pipelineIngest(config, publisher), log);
  let stopping: Promise<void> | undefined;
  const work: InFlight = { name: 'drop', stop: () => runner.stop(), interrupt: () => runner.interrupt() };
  const stop = () => (stopping ??= stopGracefully({ graceMs: config.shutdown.graceMs, log, work: [work], close: [{ name: 'drop store', close: () => store.close() }, publisher] }));
  const onSignal = () => void stop().catch(() => undefined); // logged step by step; the caller sees it through `stop()` or `summary`
  if (options.stopSignal?.aborted) onSignal();
  else options.stopSignal?.addEventListener('abort', onSignal, { once: true });
  if (!options.once) {
    runner.start();
    return { stop };
  }
  try {
    return { summary: await runner.runOnce({ waitForSettling: true, waitForLeaseMs: RUN_ONCE_LEASE_WAIT_MS }), stop: async () => {} };
  } finally {
    // Done: close quietly, unless a signal began the logged stop (which this waits for).
    await (stopping ?? runner.stop().then(() => store.close()).then(() => publisher.close()));
  }
}

/** `run --once` on a drop whose lease another worker holds waits this long, then reports `standby`. */
const RUN_ONCE_LEASE_WAIT_MS = 60_000;

/** One runner per pipeline definition in `pipelinesDirectory`, polling on its schedule. */
function startDropRunners(config: Readonly<Config>, drops: readonly OpenedDrop[], ingest: Ingest, log: Logger, metrics: Metrics): InFlight & { stores: { name: string; close(): Promise<void> } } {
  const running = drops.map(({ pipeline, store }) => {
    const runner = createPipelineRunner(config, { pipeline, store }, ingest, log, metrics);
    runner.start();
    log.info({ pipeline: pipeline.name, source: `${store.type}:${store.where}` }, `watching drop ${pipeline.name}`);
    return { runner, store };
  });
  return {
    name: 'drops',
    async stop() {
      await Promise.all(running.map(({ runner }) => runner.stop()));
    },
    interrupt() {
      for (const { runner } of running) runner.interrupt();
    },
    stores: {
      name: 'drop stores',
      async close() {
        await Promise.all(running.map(({ store }) => store.close()));
      },
    },
  };
}

/**
 * A pipeline's runner. A store without atomic rename (S3) is coordinated through a lease on the
 * broker, so several workers can serve one drop; without a broker there is no shared place for
 * it, and one worker per such drop is the rule (said in the log and README).
 */
export function createPipelineRunner(config: Readonly<Config>, { pipeline, store }: OpenedDrop, ingest: Ingest, log: Logger, metrics?: Metrics): DropRunner {
  let lease = OWN_LEASE;
  if (!store.atomicRename && config.broker.url) {
    lease = createRabbitMqLease({ url: config.broker.url, pipeline: pipeline.name, reconnect: { ...config.broker.reconnect } }, log.child({ pipeline: pipeline.name, component: 'lease' }));
  } else if (!store.atomicRename) {
    log.warn({ pipeline: pipeline.name }, `drop ${pipeline.name} (${store.type}) has no rename to claim files with, and without a broker no lease: run one worker for it`);
  }
  return createDropRunner({
    pipeline,
    store,
    lease,
    ingest,
    onboarding: config.onboarding,
    log,
    spoolDirectory: path.resolve(config.dataDirectory, 'spool'),
    ...(metrics ? { metrics } : {}),
  });
}

export function choosePublisher(config: Readonly<Config>, log: Logger): Publisher {
  if (config.environment === 'sandbox') return createNonePublisher();
  if (config.broker.url) {
    return createRabbitMqPublisher(
      {
        url: config.broker.url,
        exchange: config.broker.exchange,
        queues: config.broker.queues.map((q) => ({ name: q.name, bindingKeys: [...q.bindingKeys], ...(q.arguments ? { arguments: q.arguments } : {}) })),
        publishTimeoutMs: config.broker.publishTimeoutMs,
        reconnect: { ...config.broker.reconnect },
        clientName: 'warehouse-ingest',
      },
      log.child({ component: 'rabbitmq', broker: safeUrl(config.broker.url) }),
    );
  }
  return createEmbeddedPublisher({ directory: path.resolve(config.dataDirectory, 'outbox') }, log.child({ component: 'embedded-publisher' }));
}

/**
 * Ready when the publisher is, and — for RabbitMQ — when every kind of every tenant has a
 * routing key that some declared binding matches. Templates that use record fields are
 * checked per record at publish time instead (an unroutable record fails its batch with 503).
 */
async function readiness(config: Readonly<Config>, publisher: Publisher): Promise<ReadinessCheck> {
  const check = await publisher.readiness();
  if (publisher.name !== 'rabbitmq' || templateFields(config.broker.routingKey).length > 0) return check;
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  const bindings = config.broker.queues.flatMap((q) => q.bindingKeys);
  const problems = [...check.problems];
  for (const tenant of config.tenants) {
    for (const kind of KIND_NAMES) {
      const key = routingKeyFor(kind, tenant.businessId, {});
      if (!bindings.some((binding) => topicMatches(binding, key))) problems.push(`routing key "${key}" reaches no declared queue`);
    }
  }
  return { ready: problems.length === 0, problems };
}
