import { readFileSync } from 'node:fs';
import type net from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { LOG_MAX_PENDING_BYTES } from './log.js';
import type { SharedState } from './http-state/state.js';
import type { BatchOutcome } from './ingest/batch.js';
import type { Publisher } from './publish/publisher.js';
import type { RabbitMqPublisher } from './publish/rabbitmq.js';
import { counterSeries, histogramSeries } from './metric-series.js';
import { createDropMetrics, type DropMetrics } from './drops/metrics.js';

/** One answer of the partner-facing app, as `observeRequest` takes it. */
export interface RequestObservation {
  /** The route template (`/api/v2/sales-orders`, `/docs/:asset`), or `unmatched`: never the raw URL. */
  readonly route: string;
  readonly method: string;
  readonly status: number;
  /** The authenticated business, when admission got that far. */
  readonly businessId: string | undefined;
  readonly seconds: number;
}

/** The partner-facing listener (`http.*`) and the admin one (`admin.*`). */
export type ListenerName = 'public' | 'admin';

/**
 * Why the service closed a connection itself. `limit`: the listener already held its
 * `maxConnections` (Node closes the new one at once, unread). `handshake-timeout`: a TLS handshake
 * not finished in time. `client-error`: what the client sent was not TLS or not HTTP, or too large,
 * or too slow (a `400`, `408` or `431` is answered where HTTP can carry it). A client that leaves
 * (a reset, a broken pipe) is not counted: nothing was refused.
 */
export type DropReason = 'limit' | 'handshake-timeout' | 'client-error';

/**
 * Why the failed-login throttle refused an unverified login: `client`, its business id failed
 * too often from that address; `address`, too many business ids failed from that address (the ceiling).
 */
export type LoginRefusalReason = 'client' | 'address';
const LOGIN_REFUSAL_REASONS: readonly LoginRefusalReason[] = ['client', 'address'];

/** One listener's connection metrics (`ConnectionMetrics.listener`). */
export interface ListenerMetrics {
  dropped(reason: DropReason): void;
}

export interface ConnectionMetrics {
  /**
   * Starts a listener's series: its open connections (read at each scrape), its limit, and the
   * connections it closed itself, every one of `reasons` at 0 from the start.
   */
  listener(name: ListenerName, server: net.Server, reasons: readonly DropReason[]): ListenerMetrics;
}
export interface Metrics extends DropMetrics, ConnectionMetrics {
  /** One registry per app instance (not prom-client's global one), so apps and tests never share series. */
  readonly registry: Registry;
  /** For `createIngest({ observer })`. */
  readonly observeBatch: (outcome: BatchOutcome) => void;
  /** The publisher, timing every `publish()` call (one batch, or one chunk of a streamed one). */
  timed(publisher: Publisher): Publisher;
  /** `warehouse_ingest_broker_connected` follows this publisher (RabbitMQ only: the others have no connection). */
  watchBroker(publisher: Publisher): void;
  /** Every answer of the partner-facing app (refusals too: 401, 413, 415, 429 …). */
  observeRequest(request: RequestObservation): void;
  /**
   * `warehouse_ingest_shared_state_reachable` follows this store, and its refusals are counted
   * from 0 (so that `increase()` sees the first one).
   */
  watchSharedState(state: Pick<SharedState, 'kind' | 'reachable'>): void;
  /** A request refused because the shared state could not be reached (`503 idempotency-unavailable`). */
  sharedStateRefused(backend: SharedState['kind']): void;
  /** An unverified login refused by the failed-login throttle (`429`), by reason. */
  loginRefused(reason: LoginRefusalReason): void;
}

export interface MetricsOptions {
  /**
   * Business ids that may appear as a label; any other is counted as `other`. The sandbox takes
   * any credentials, and a label per invented id would grow without bound.
   */
  readonly businesses: readonly string[];
  /** The drop pipelines that run: each has its per-pipeline counters at 0 from the start. @default none */
  readonly pipelines?: readonly string[];
  /** Node process metrics (CPU, memory, event loop). Off in tests: each set starts a timer. @default false */
  readonly processMetrics?: boolean;
  /** Log lines dropped so far because stdout took nothing (`createLogger({ onDrop })`). @default none counted */
  readonly droppedLogLines?: () => number;
}

/** The package's version, for `warehouse_ingest_build_info`. */
const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** HTTP methods as labels; anything else is `other` (a label per invented method would grow without bound). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const businesses = new Set(options.businesses);
  if (options.processMetrics) collectDefaultMetrics({ register: registry });

  // Touched on every batch: counted without prom-client's per-call label hashing (metric-series.ts).
  const batchLabels = ['outcome', 'kind', 'source', 'business'];
  const batches = counterSeries(registry, {
    name: 'warehouse_ingest_batches_total',
    help: "Batches that reached the pipeline, by outcome (accepted; rejected: the input's fault; unavailable: the broker or a drop store was not there; error: a bug).",
    labelNames: batchLabels,
  });
  const records = counterSeries(registry, {
    name: 'warehouse_ingest_records_total',
    help: 'Records of those batches, by the batch outcome (all-or-nothing: a rejected batch counts all its records).',
    labelNames: batchLabels,
  });
  const publishLatency = histogramSeries(registry, {
    name: 'warehouse_ingest_publish_duration_seconds',
    help: 'Time from publish() to the confirm of every message of the call, by outcome (confirmed, unconfirmed).',
    labelNames: ['publisher', 'outcome'],
    buckets: LATENCY_BUCKETS,
  });
  const { droppedLogLines } = options;
  if (droppedLogLines)
    new Counter({
      name: 'warehouse_ingest_log_lines_dropped_total',
      help: `Log lines dropped because stdout took nothing while ${LOG_MAX_PENDING_BYTES / 1024 / 1024} MiB of lines waited (a stalled log collector).`,
      registers,
      collect() {
        this.reset();
        this.inc(droppedLogLines());
      },
    });
  const requests = counterSeries(registry, {
    name: 'warehouse_ingest_http_requests_total',
    help: 'Answers of the partner-facing port, by route template, method, status and business (`none` before authentication, `other` for ids not configured).',
    labelNames: ['route', 'method', 'status', 'business'],
  });
  const requestLatency = histogramSeries(registry, {
    name: 'warehouse_ingest_http_request_duration_seconds',
    help: 'Time from the request to its answer on the partner-facing port, by route template, method and status.',
    labelNames: ['route', 'method', 'status'],
    buckets: LATENCY_BUCKETS,
  });
  const listeners = new Map<ListenerName, net.Server>();
  const droppedConnections = new Counter({
    name: 'warehouse_ingest_http_connections_dropped_total',
    help: 'Connections a listener (public, admin) closed itself, by reason: limit (it already held its maxConnections), handshake-timeout (TLS handshake not finished in time), client-error (not TLS, not HTTP, too large or too slow).',
    labelNames: ['listener', 'reason'] as const,
    registers,
  });
  new Gauge({
    name: 'warehouse_ingest_http_open_connections',
    help: 'Connections a listener (public, admin) holds now, TLS handshakes in progress and idle keep-alive ones included.',
    labelNames: ['listener'] as const,
    registers,
    async collect() {
      for (const [listener, server] of listeners)
        this.set({ listener }, await openConnections(server));
    },
  });
  new Gauge({
    name: 'warehouse_ingest_http_max_connections',
    help: 'The most connections a listener (public, admin) holds at once (http.maxConnections, admin.maxConnections).',
    labelNames: ['listener'] as const,
    registers,
    collect() {
      for (const [listener, server] of listeners) this.set({ listener }, server.maxConnections);
    },
  });
  const sharedStateRefused = new Counter({
    name: 'warehouse_ingest_shared_state_refused_total',
    help: 'Requests refused (503 idempotency-unavailable) because the shared state could not be reached, by backend.',
    labelNames: ['backend'] as const,
    registers,
  });
  const loginRefusals = new Counter({
    name: 'warehouse_ingest_login_refusals_total',
    help: 'Unverified logins refused (429) by the failed-login throttle, by reason: client (its business id failed too often from that address), address (too many business ids failed from that address: the ceiling).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of LOGIN_REFUSAL_REASONS) loginRefusals.inc({ reason }, 0);
  new Gauge({
    name: 'warehouse_ingest_build_info',
    help: 'Always 1; the labels say which build runs: the package version and the Node.js version.',
    labelNames: ['version', 'node'] as const,
    registers,
  }).set({ version: VERSION, node: process.version }, 1);

  const drops = createDropMetrics(registry, options.pipelines ?? []);
  return {
    ...drops,
    registry,
    observeBatch({ batch, outcome, records: count }) {
      const values = [
        outcome,
        batch.kind.name,
        batch.source.type,
        businesses.has(batch.businessId) ? batch.businessId : 'other',
      ];
      batches.inc(values);
      if (count > 0) records.inc(values, count);
    },
    timed(publisher) {
      return {
        name: publisher.name,
        target: publisher.target,
        start: () => publisher.start(),
        readiness: () => publisher.readiness(),
        close: () => publisher.close(),
        async publish(messages) {
          const started = performance.now();
          const seconds = () => (performance.now() - started) / 1000;
          try {
            await publisher.publish(messages);
            publishLatency.observe([publisher.name, 'confirmed'], seconds());
          } catch (error) {
            publishLatency.observe([publisher.name, 'unconfirmed'], seconds());
            throw error;
          }
        },
      };
    },
    watchBroker(publisher) {
      // Registered only for RabbitMQ: an unlabelled gauge would read 0 for publishers with no connection at all.
      if (!isRabbitMq(publisher) || registry.getSingleMetric('warehouse_ingest_broker_connected'))
        return;
      new Gauge({
        name: 'warehouse_ingest_broker_connected',
        help: '1 while a publishing channel to RabbitMQ is open, 0 otherwise.',
        registers,
        collect() {
          this.set(publisher.connected ? 1 : 0);
        },
      });
    },
    observeRequest({ route, method, status, businessId, seconds }) {
      const values = [route, METHODS.has(method) ? method : 'other', String(status)];
      const business =
        businessId === undefined ? 'none' : businesses.has(businessId) ? businessId : 'other';
      requestLatency.observe(values, seconds);
      requests.inc([...values, business]);
    },
    watchSharedState(state) {
      if (registry.getSingleMetric('warehouse_ingest_shared_state_reachable')) return;
      new Gauge({
        name: 'warehouse_ingest_shared_state_reachable',
        help: '1 while the shared state (Idempotency-Key records, limits) answers, 0 otherwise, by backend (memory: always 1).',
        labelNames: ['backend'] as const,
        registers,
        collect() {
          this.set({ backend: state.kind }, state.reachable ? 1 : 0);
        },
      });
      sharedStateRefused.inc({ backend: state.kind }, 0);
    },
    sharedStateRefused(backend) {
      sharedStateRefused.inc({ backend });
    },
    loginRefused(reason) {
      loginRefusals.inc({ reason });
    },
    listener(listener, server, reasons) {
      listeners.set(listener, server);
      // Every reason at 0 from the start: increase() sees the first drop.
      const counters = new Map(
        reasons.map((reason) => [reason, droppedConnections.labels({ listener, reason })]),
      );
      for (const counter of counters.values()) counter.inc(0);
      return {
        dropped: (reason) =>
          (counters.get(reason) ?? droppedConnections.labels({ listener, reason })).inc(),
      };
    },
  };
}

function openConnections(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.getConnections((_error, count) => resolve(count ?? 0)));
}

function isRabbitMq(publisher: Publisher): publisher is RabbitMqPublisher {
  return publisher.name === 'rabbitmq' && 'connected' in publisher;
}
