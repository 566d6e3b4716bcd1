import type { H3 } from 'h3';
import type { Config } from '../config.js';
import type { OpenedDrop } from '../drops/open.js';
import { probeDrops, type DropCheck } from '../drops/probe.js';
import { openLineageJournal, type LineageJournal } from '../lineage/journal.js';
import type { Logger } from '../log.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { withBulkhead } from '../pipeline/bulkhead.js';
import { configuredIngest } from '../pipeline/configured.js';
import { compileRoutingKey, templateFields, topicMatches } from '../pipeline/route.js';
import type { Publisher, ReadinessCheck } from '../publish/publisher.js';
import { KIND_NAMES } from '../records/kind.js';
import { createAdmission } from './admission.js';
import { createAdminApp } from './admin.js';
import { createHttpApp } from './app.js';
import { createAuthThrottle } from './auth-throttle.js';
import { createAuthenticator } from './auth.js';
import { createIdempotencyStore } from './idempotency.js';
import { createRateLimiter } from './rate-limit.js';

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

/** The partner-facing app and the admin app (metrics, readiness), sharing one set of metrics. */
export interface HttpApps {
  readonly app: H3;
  readonly admin: H3;
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
  const app = createHttpApp({
    ingest: withBulkhead(configuredIngest(config, publisher, metrics), {
      maxInFlight: abuse.maxInFlightBatches,
    }),
    admission: createAdmission({
      authenticator: createAuthenticator({
        tenants: config.tenants,
        acceptAnyCredentials: sandbox,
      }),
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
  });
  const admin = createAdminApp({
    metrics: metrics.registry,
    log,
    stopping: parts.stopping,
    readiness: async () => {
      const [check, dropChecks] = await Promise.all([
        routesReadiness(config, publisher),
        probeDrops(drops.map(({ pipeline, store }) => ({ pipeline: pipeline.name, store }))),
      ]);
      return withDrops(check, dropChecks);
    },
  });
  return { app, admin };
}

function withDrops(
  check: ReadinessCheck,
  drops: readonly DropCheck[],
): ReadinessCheck & { drops: readonly DropCheck[] } {
  const unreachable = drops
    .filter((d) => !d.reachable)
    .map((d) => `drop "${d.pipeline}" (${d.source}) is not reachable: ${d.problem ?? 'unknown'}`);
  return {
    ready: check.ready && unreachable.length === 0,
    problems: [...check.problems, ...unreachable],
    drops,
  };
}

/**
 * Ready when the publisher is, and — for RabbitMQ — when every kind of every tenant has a
 * routing key that some declared binding matches. Templates that use record fields are
 * checked per record at publish time instead (an unroutable record fails its batch with 503).
 */
async function routesReadiness(
  config: Readonly<Config>,
  publisher: Publisher,
): Promise<ReadinessCheck> {
  const check = await publisher.readiness();
  if (publisher.name !== 'rabbitmq' || templateFields(config.broker.routingKey).length > 0)
    return check;
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  const bindings = config.broker.queues.flatMap((q) => q.bindingKeys);
  const problems = [...check.problems];
  for (const tenant of config.tenants) {
    for (const kind of KIND_NAMES) {
      const key = routingKeyFor(kind, tenant.businessId, {});
      if (!bindings.some((binding) => topicMatches(binding, key)))
        problems.push(`routing key "${key}" reaches no declared queue`);
    }
  }
  return { ready: problems.length === 0, problems };
}
