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
  readonly readiness: () => Promise<ReadinessCheck & { readonly drops?: readonly DropCheck[] }>;
  /** What GET /metrics exposes. */
  readonly metrics: Registry;
  readonly log: Logger;
  /** True once the service is stopping: /readyz answers 503 so no new traffic is sent. @default never */
  readonly stopping?: () => boolean;
}

const NONE: Record<string, string> = {};

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
    const check = deps.stopping?.()
      ? { ready: false, problems: ['the service is stopping'] }
      : await deps.readiness();
    const state = check.ready ? 'ready' : `not ready: ${check.problems.join('; ')}`;
    if (state !== lastState) {
      if (check.ready) deps.log.info('ready: /readyz answers 200');
      else deps.log.warn({ problems: check.problems }, 'not ready: /readyz answers 503');
      lastState = state;
    }
    // `drops` only when there are some: the body stays `{"status":"ready"}` for an HTTP-only service.
    if (check.ready)
      return jsonResponse(
        200,
        { status: 'ready', ...(check.drops?.length ? { drops: check.drops } : {}) },
        context,
        NONE,
      );
    return problemResponse(new NotReady(check.problems), event, context, NONE, false);
  };
}
