import type { H3 } from 'h3';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { spoolDirectory, type Config } from '../config.js';
import { SPOOL_OWNER } from '../drops/spool.js';
import type { OpenedDrop } from '../drops/open.js';
import { settleFolders } from '../drops/layout.js';
import { probeDrops, type DropCheck } from '../drops/probe.js';
import { openLineageJournal, type LineageJournal } from '../lineage/journal.js';
import type { Logger } from '../log.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { createBulkhead } from '../ingest/bulkhead.js';
import { configuredIngest } from '../ingest/configured.js';
import { compileRoutingKey, templateFields, topicMatches } from '../ingest/route.js';
import type { Publisher, ReadinessCheck } from '../publish/publisher.js';
import type { RabbitMqPublisher } from '../publish/rabbitmq.js';
import { KIND_NAMES } from '../records/kind.js';
import type { ProfilesSource } from '../records/legacy/index.js';
import { DEMO_API_KEY_HASH, tenantKeyHashes } from '../api-keys.js';
import { createAdmission } from './admission.js';
import { createAdminApp, type Readiness } from './admin.js';
import { createHttpApp } from './app.js';
import { createAuthThrottle } from './auth-throttle.js';
import { createAuthenticator, type Authenticator } from './auth.js';
import { createDecodeGate } from './body.js';
import { createIdempotencyStore } from './idempotency.js';
import { createRateLimiter } from './rate-limit.js';
import { mountApiDocs } from './docs.js';
import { createMemoryState } from '../http-state/memory.js';
import type { SharedState } from '../http-state/state.js';
import type { EventActions } from '../events/actions.js';
import type { HistoryStore } from '../history/store.js';
import type { HistoryWriter } from '../history/writer.js';

export interface HttpAppParts {
  /** @default a fresh set, on its own registry */
  readonly metrics?: Metrics;
  /** The drops `/readyz` lists. @default none */
  readonly drops?: readonly OpenedDrop[];
  /** The HTTP lineage journal. @default one over `lineage.directory` (none in the sandbox) */
  readonly lineage?: LineageJournal;
  /** The history's writer: every batch's outcome is queued to it. @default none */
  readonly history?: HistoryWriter;
  /** The history's reads (the partner API). @default none */
  readonly historyStore?: HistoryStore;
  /** The events worker's actions (the partner API's webhooks and resend). @default none */
  readonly events?: EventActions;
  /** True once the service is stopping: new requests are answered 503. @default never */
  readonly stopping?: () => boolean;
  /** Idempotency records, rate-limit buckets, failed logins. @default in memory (`openSharedState` opens the configured one) */
  readonly sharedState?: SharedState;
  /** The onboarding profiles in force (a reload swaps them). @default the configuration's */
  readonly onboarding?: ProfilesSource;
}

/** The partner-facing app and the admin app (metrics, readiness), sharing one set of metrics. */
export interface HttpApps {
  readonly app: H3;
  readonly admin: H3;
  /** Whose keys are accepted; a configuration reload gives it the new tenants. */
  readonly authenticator: Authenticator;
}

/** The HTTP facade over the shared pipeline, as configured; tests build it the same way, without a socket. */
export function buildHttpApp(
  config: Readonly<Config>,
  publisher: Publisher,
  log: Logger,
  parts: HttpAppParts = {},
): HttpApps {
  const sandbox = config.environment === 'sandbox';
  const { abuse } = config.http;
  const metrics =
    parts.metrics ?? createMetrics({ businesses: config.tenants.map((t) => t.businessId) });
  metrics.watchBroker(publisher);
  const drops = parts.drops ?? [];
  const lineage = parts.lineage ?? openLineageJournal(config, log, metrics);
  const { idempotency } = abuse;
  const state =
    parts.sharedState ??
    createMemoryState({ maxEntries: idempotency.maxEntries, maxBytes: idempotency.maxBytes });
  metrics.watchSharedState(state);
  const apiDocsOnAdmin = config.http.apiDocs === 'admin';
  const demoCredential = config.tenants.some((tenant) =>
    tenantKeyHashes(tenant).includes(DEMO_API_KEY_HASH),
  );
  const authenticator = createAuthenticator({
    tenants: config.tenants,
    acceptAnyCredentials: sandbox,
  });
  const app = createHttpApp({
    ingest: configuredIngest(config, publisher, metrics),
    bulkhead: createBulkhead({ maxInFlight: abuse.maxInFlightBatches }),
    decoders: createDecodeGate(config.http.maxConcurrentDecodes),
    admission: createAdmission({
      authenticator,
      throttle: createAuthThrottle(abuse.authThrottle, state.failures),
      rateLimiter: createRateLimiter(abuse.rateLimit, state.buckets),
      trustProxyHops: config.http.trustProxyHops,
      onLoginRefused: metrics.loginRefused,
    }),
    idempotency: createIdempotencyStore(
      {
        ...idempotency,
        inFlightMs: inFlightMs(config),
        onUnavailable: () => metrics.sharedStateRefused(state.kind),
      },
      state.claims,
    ),
    apiDocs: !apiDocsOnAdmin,
    log,
    stopping: parts.stopping,
    observeRequest: metrics.observeRequest,
    publicUrls: config.http.publicUrls,
    demoCredential,
    bodyLimitBytes: config.http.bodyLimitBytes,
    maxRecordsPerBatch: config.http.maxRecordsPerBatch,
    onboarding: parts.onboarding ?? config.onboarding,
    responseHeaders: sandbox ? { 'ingest-environment': 'sandbox' } : {},
    ...(lineage && { lineage }),
    ...(parts.history && { history: parts.history }),
    ...(parts.historyStore && { historyStore: parts.historyStore }),
    ...(parts.events && { events: parts.events }),
    spoolFile: () => path.join(spoolDirectory(config), `${SPOOL_OWNER}${randomUUID()}.messages`),
  });
  const admin = createAdminApp({
    metrics: metrics.registry,
    log,
    stopping: parts.stopping,
    readiness: async () => {
      const [publisherCheck, dropChecks] = await Promise.all([
        publisher.readiness(),
        probeDrops(
          drops.map(({ pipeline, store }) => ({
            pipeline: pipeline.name,
            store,
            settleFolders: settleFolders(pipeline),
          })),
        ),
      ]);
      const ready = readinessOf(
        publisher,
        publisherCheck,
        routeProblems(config, publisher),
        dropChecks,
      );
      const { history } = parts;
      return history
        ? {
            ...ready,
            history: {
              reachable: history.reachable !== false,
              ...(history.health && { writes: history.health }),
              pendingRows: history.pendingRows,
            },
          }
        : ready;
    },
  });
  if (apiDocsOnAdmin) mountApiDocs(admin, log, {}, config.http.publicUrls, demoCredential);
  return { app, admin, authenticator };
}

/**
 * How long an `Idempotency-Key` claim may wait for its answer before the key is free again (an
 * instance that died mid-request must not block the key for the whole TTL): the request's own
 * limits, twice over.
 */
function inFlightMs(config: Readonly<Config>): number {
  return Math.max(60_000, 2 * (config.http.requestTimeoutMs + config.broker.publishTimeoutMs));
}

function brokerFacts(publisher: RabbitMqPublisher): Pick<Readiness, 'broker' | 'brokerNode'> {
  const node = publisher.node;
  return {
    broker: publisher.connected ? 'reachable' : 'unreachable',
    ...(node !== undefined && { brokerNode: node }),
  };
}

function readinessOf(
  publisher: Publisher,
  publisherCheck: ReadinessCheck,
  routes: readonly string[],
  drops: readonly DropCheck[],
): Readiness {
  const unreachable = drops
    .filter((d) => !d.reachable)
    .map((d) => `drop "${d.pipeline}" (${d.source}) is not reachable: ${d.problem ?? 'unknown'}`);
  const problems = [...routes, ...unreachable];
  return {
    ready: publisherCheck.ready && problems.length === 0,
    publisherProblems: publisherCheck.ready ? [] : publisherCheck.problems,
    ...(publisher.name === 'rabbitmq' && brokerFacts(publisher as RabbitMqPublisher)),
    problems,
    drops,
  };
}

/**
 * For RabbitMQ, every kind of every tenant must have a routing key that some declared binding
 * matches. Templates that use record fields are checked per record at publish time instead (an
 * unroutable record fails its batch with 503).
 */
function routeProblems(config: Readonly<Config>, publisher: Publisher): string[] {
  if (publisher.name !== 'rabbitmq' || templateFields(config.broker.routingKey).length > 0)
    return [];
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  const bindings = config.broker.queues.flatMap((q) => q.bindingKeys);
  const problems: string[] = [];
  for (const tenant of config.tenants) {
    for (const kind of KIND_NAMES) {
      const key = routingKeyFor(kind, tenant.businessId, {});
      if (!bindings.some((binding) => topicMatches(binding, key)))
        problems.push(`routing key "${key}" reaches no declared queue`);
    }
  }
  return problems;
}
