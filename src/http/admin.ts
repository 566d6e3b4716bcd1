import { H3, type H3Event } from 'h3';
import type { Registry } from 'prom-client';
import type { DropCheck } from '../drops/probe.js';
import { NotFound, NotReady } from '../errors.js';
import type { Logger } from '../log.js';
import type { ReadinessCheck } from '../publish/publisher.js';
import { jsonResponse, metricsResponse, problemResponse, requestContext } from './respond.js';

/**
 * The admin listener (`admin.host`, `admin.port`; loopback by default): what operators and
 * their tools read — metrics (tenant ids as labels), readiness (pipeline names are partner
 * names), liveness — kept off the partner-facing port.
 */
export interface AdminAppDependencies {
  /** Everything /readyz checks: broker, routes, sources. */
  readonly readiness: () => Promise<Readiness>;
  /** What GET /metrics exposes. */
  readonly metrics: Registry;
  readonly log: Logger;
  /** True once the service is stopping: /readyz answers 503 so no new traffic is sent. @default never */
  readonly stopping?: () => boolean;
}

/**
 * What /readyz knows. The publisher's own lines name the broker's host, port and vhost (or the
 * outbox folder): they go to the log only, and the answer says `broker: reachable` or
 * `broker: unreachable`. The admin listener has no authentication, and may be opened to a
 * network for an orchestrator's probes. What it does show of the broker is the node the
 * publisher is connected to, as `host:port` (never a user, password or vhost): with a cluster,
 * which node an instance is on is the first thing an operator asks.
 */
export interface Readiness extends ReadinessCheck {
  /** Why the publisher is not ready, for the log only. Empty when it is. */
  readonly publisherProblems: readonly string[];
  /** RabbitMQ: whether a publishing channel is open. Absent for the embedded publisher and the sandbox. */
  readonly broker?: 'reachable' | 'unreachable';
  /** RabbitMQ: the node (`host:port`) the publishing connection is on, while connected. */
  readonly brokerNode?: string;
  /**
   * Each drop's last probe. A detail only: a partner's drop that cannot be listed is that
   * partner's outage, never a reason to take this instance out of the load balancer.
   */
  readonly drops?: readonly DropCheck[];
  /** Redis, when the shared state is on it: whether a connection is ready now. A detail only. */
  readonly sharedState?: { readonly reachable: boolean };
  /**
   * The history, when it is on: whether its last write reached the store and wrote, how it went, and the rows waiting.
   * A detail only: an unreachable history never makes the service not ready (ingest goes on).
   */
  readonly history?: {
    readonly reachable: boolean;
    /** How the last write went: `ok`, `unreachable` (the store away or past its deadline), `failing` (it answers but cannot write). Absent before the first. */
    readonly writes?: 'ok' | 'unreachable' | 'failing';
    readonly pendingRows: number;
  };
}

const NONE: Record<string, string> = {};

/** The lines a probe may read: the publisher's as one line without addresses, then the rest. */
function answeredProblems(check: Readiness): string[] {
  if (check.publisherProblems.length === 0) return [...check.problems];
  const publisher =
    check.broker === undefined
      ? 'publisher: not ready (the reasons are in the service log)'
      : check.broker === 'unreachable'
        ? 'broker: unreachable'
        : `broker: reachable${check.brokerNode ? ` (node ${check.brokerNode})` : ''}, not ready (the reasons are in the service log)`;
  return [publisher, ...check.problems];
}

export function createAdminApp(deps: AdminAppDependencies): H3 {
  const app = new H3({
    silent: true,
    onError: (error, event) =>
      problemResponse(
        error.status === 404
          ? new NotFound({ detail: 'The admin listener serves /healthz, /readyz and /metrics.' })
          : (error.cause ?? error),
        event,
        requestContext(event, deps.log),
        NONE,
      ),
  });
  app.get('/healthz', (event) =>
    jsonResponse(200, { status: 'ok' }, requestContext(event, deps.log), NONE),
  );
  app.get('/readyz', readinessHandler(deps));
  app.get('/metrics', (event) =>
    metricsResponse(deps.metrics, requestContext(event, deps.log), NONE),
  );
  return app;
}

/**
 * GET /readyz. A probe asks every few seconds: its answer is not logged, only each change of
 * state (ready → not ready with the reasons, and back), once, without a stack trace.
 */
function readinessHandler(deps: AdminAppDependencies) {
  let lastState: string | undefined;
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const check: Readiness = deps.stopping?.()
      ? { ready: false, problems: ['the service is stopping'], publisherProblems: [] }
      : await deps.readiness();
    const logged = [...check.publisherProblems, ...check.problems];
    const state = check.ready ? 'ready' : `not ready: ${logged.join('; ')}`;
    if (state !== lastState) {
      if (check.ready) deps.log.info('ready: /readyz answers 200');
      else deps.log.warn({ problems: logged }, 'not ready: /readyz answers 503');
      lastState = state;
    }
    // `drops` only when there are some: the body stays `{"status":"ready"}` for an HTTP-only service.
    if (check.ready)
      return jsonResponse(
        200,
        {
          status: 'ready',
          ...(check.brokerNode ? { broker: { node: check.brokerNode } } : {}),
          ...(check.drops?.length ? { drops: check.drops } : {}),
          ...(check.sharedState && { sharedState: check.sharedState }),
          ...(check.history && { history: check.history }),
        },
        context,
        NONE,
      );
    return problemResponse(new NotReady(answeredProblems(check)), event, context, NONE, false);
  };
}
