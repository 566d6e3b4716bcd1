import { H3, type HTTPError, type H3Event } from 'h3';
import {
  isIngestError,
  MalformedBody,
  MethodNotAllowed,
  NotFound,
  ShuttingDown,
  type IngestError,
} from '../errors.js';
import type { RequestObservation } from '../metrics.js';
import { KINDS } from '../records/index.js';
import { LEGACY } from '../records/legacy/index.js';
import type { EventActions } from '../events/actions.js';
import type { HistoryStore } from '../history/store.js';
import { mountApiDocs } from './docs.js';
import { listBatchesHandler, oneBatchHandler } from './partner-batches.js';
import { listEventsHandler, resendEventHandler } from './partner-events.js';
import { listWebhooksHandler, testWebhookHandler } from './partner-webhooks.js';
import { recordHandler } from './partner-records.js';
import { v2BatchHandler } from './v2.js';
import { problemPage } from './problem-pages.js';
import {
  deprecationHeaders,
  stockHandler,
  V1_DEPRECATED_SINCE,
  v1BatchHandler,
  type V1Dependencies,
} from './v1.js';
import { jsonResponse, problemResponse, requestContext, type RequestContext } from './respond.js';

export interface HttpAppDependencies extends V1Dependencies {
  /** True once the service is stopping: every request that arrives then is answered 503 (`/readyz` too). @default never */
  readonly stopping?: () => boolean;
  /** Told of every answer, refusals included (metrics). @default nobody */
  readonly observeRequest?: (request: RequestObservation) => void;
  /** `servers` of /openapi.json (`http.publicUrls`). @default the document's own origin */
  readonly publicUrls?: readonly string[];
  /** The demo tenant is configured: /docs may tell readers to authorize as `DEMO`. @default false */
  readonly demoCredential?: boolean;
  /** `/docs` and `/openapi.json` on this app (false: on the admin listener instead). @default true */
  readonly apiDocs?: boolean;
  /** The history's reads, for the partner API (`GET /api/v2/batches`…). @default none: those answer 404 */
  readonly historyStore?: HistoryStore;
  /** The events worker's actions (webhooks, test, resend). @default none: those answer 404 */
  readonly events?: EventActions;
}

/** Where the time of a request starts when nothing made its `RequestContext` (docs, assets). */
const STARTED = Symbol('started');

/**
 * The route table. Handlers stay thin; every failure, thrown anywhere, becomes problem
 * details in `problemResponse` — h3's own errors (no route, malformed URL) included.
 */
export function createHttpApp(deps: HttpAppDependencies): H3 {
  const extra = deps.responseHeaders;
  const { observeRequest } = deps;
  const app = new H3({
    silent: true,
    onError: (error, event) =>
      problemResponse(fromH3Error(error), event, requestContext(event, deps.log), extra),
    // Every answer, whatever made it (a handler, onError, a 404): one count and one trace end each.
    onRequest: (event) => {
      (event.context as Record<symbol, number>)[STARTED] = performance.now();
    },
    onResponse: (response, event) => {
      const context = event.context.request as RequestContext | undefined;
      // The route template, never the raw URL: a label per path sent would grow without bound.
      const route = event.context.matchedRoute?.route ?? 'unmatched';
      const { method } = event.req;
      context?.traceIfBegun?.end({
        name: `${method} ${route}`,
        attributes: {
          'http.request.method': method,
          'http.route': route,
          'http.response.status_code': response.status,
        },
        failed: response.status >= 500,
      });
      if (!observeRequest) return;
      const started = (event.context as Record<symbol, number>)[STARTED] ?? context?.started;
      observeRequest({
        route,
        method,
        status: response.status,
        businessId: context?.businessId,
        seconds: started === undefined ? 0 : (performance.now() - started) / 1000,
      });
    },
  });

  const guard =
    (handler: (event: H3Event) => Promise<Response>, headers = extra) =>
    async (event: H3Event): Promise<Response> => {
      try {
        return await handler(event);
      } catch (error) {
        return problemResponse(error, event, requestContext(event, deps.log), headers);
      }
    };
  // First of all: a request that arrives after the stop began is not taken (one in flight finishes).
  const { stopping } = deps;
  if (stopping)
    app.use((event) =>
      stopping()
        ? problemResponse(new ShuttingDown(), event, requestContext(event, deps.log), extra)
        : undefined,
    );
  const onlyMethods = (allow: string, headers = extra) =>
    guard(async () => {
      throw new MethodNotAllowed({
        detail: `This resource accepts ${allow} only.`,
        headers: { allow },
      });
    }, headers);

  for (const kind of Object.values(KINDS)) {
    const path = `/api/v2/${kind.name}`;
    app.post(path, guard(v2BatchHandler(kind, deps)));
    app.all(path, onlyMethods('POST'));
  }

  for (const kind of Object.values(KINDS)) {
    const converter = LEGACY[kind.name];
    if (!converter) continue;
    const path = `/api/v1/${kind.name}`;
    const headers = { ...extra, ...deprecationHeaders(`/api/v2/${kind.name}`) };
    app.post(path, guard(v1BatchHandler(kind, converter, deps), headers));
    app.all(path, onlyMethods('POST', headers));
  }
  // The partner API's reads: a business's own batches, records, events and endpoints.
  const reads = {
    admission: deps.admission,
    bulkhead: deps.bulkhead,
    log: deps.log,
    responseHeaders: extra,
    ...(deps.historyStore && { history: deps.historyStore }),
    ...(deps.events && { events: deps.events }),
  };
  for (const [path, handler] of [
    ['/api/v2/batches', listBatchesHandler(reads)],
    ['/api/v2/batches/:correlationId', oneBatchHandler(reads)],
    ['/api/v2/records/:kind/:key', recordHandler(reads)],
    ['/api/v2/events', listEventsHandler(reads)],
    ['/api/v2/webhooks', listWebhooksHandler(reads)],
  ] as const) {
    app.get(path, guard(handler));
    app.all(path, onlyMethods('GET'));
  }
  // The partner API's two actions: an event sent again, a test event to one endpoint.
  for (const [path, handler] of [
    ['/api/v2/events/:id/resend', resendEventHandler(reads)],
    ['/api/v2/webhooks/:id/test', testWebhookHandler(reads)],
  ] as const) {
    app.post(path, guard(handler));
    app.all(path, onlyMethods('POST'));
  }

  const stock = '/api/v1/customer/:accountId/stock';
  app.get(stock, guard(stockHandler(deps), { ...extra, deprecation: `@${V1_DEPRECATED_SINCE}` }));
  app.all(stock, onlyMethods('GET'));

  // Also here, not only on the admin listener: load balancers probe the port they send traffic to.
  app.get('/healthz', (event) =>
    jsonResponse(200, { status: 'ok' }, requestContext(event, deps.log), extra),
  );
  // Problem `type`s are relative URIs: resolved against the service, each is a page saying what it means.
  app.get(
    '/problems/:code',
    guard(async (event) => problemPage(event.context.params?.code)),
  );
  if (deps.apiDocs !== false)
    mountApiDocs(app, deps.log, extra, deps.publicUrls ?? [], deps.demoCredential);
  return app;
}

function fromH3Error(error: HTTPError): IngestError | unknown {
  if (isIngestError(error.cause)) return error.cause;
  if (error.status === 404)
    return new NotFound({ detail: 'No resource at this path. The API lives under /api/v2/.' });
  if (error.status === 400) return new MalformedBody({ detail: 'The request URL is malformed.' });
  if (error.status === 405) return new MethodNotAllowed({ detail: 'Method not allowed.' });
  return error.cause ?? error;
}
