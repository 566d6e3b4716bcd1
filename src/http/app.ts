import { H3, type HTTPError, type H3Event } from 'h3';
import {
  isIngestError,
  MalformedBody,
  MethodNotAllowed,
  NotFound,
  ShuttingDown,
  type IngestError,
} from '../errors.js';
import { KINDS } from '../records/index.js';
import { LEGACY } from '../records/legacy/index.js';
import { docsAsset, docsPage } from './docs.js';
import { v2BatchHandler } from './v2.js';
import { openApiDocument } from './openapi.js';
import {
  deprecationHeaders,
  stockHandler,
  V1_DEPRECATED_SINCE,
  v1BatchHandler,
  type V1Dependencies,
} from './v1.js';
import { jsonResponse, problemResponse, requestContext } from './respond.js';

export interface HttpAppDependencies extends V1Dependencies {
  /** True once the service is stopping: every request that arrives then is answered 503 (`/readyz` too). @default never */
  readonly stopping?: () => boolean;
}

/**
 * The route table. Handlers stay thin; every failure, thrown anywhere, becomes problem
 * details in `problemResponse` — h3's own errors (no route, malformed URL) included.
 */
export function createHttpApp(deps: HttpAppDependencies): H3 {
  const extra = deps.responseHeaders;
  const app = new H3({
    silent: true,
    onError: (error, event) =>
      problemResponse(fromH3Error(error), event, requestContext(event, deps.log), extra),
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
  const stock = '/api/v1/customer/:accountId/stock';
  app.get(stock, guard(stockHandler(deps), { ...extra, deprecation: `@${V1_DEPRECATED_SINCE}` }));
  app.all(stock, onlyMethods('GET'));

  // Also here, not only on the admin listener: load balancers probe the port they send traffic to.
  app.get('/healthz', (event) =>
    jsonResponse(200, { status: 'ok' }, requestContext(event, deps.log), extra),
  );
  app.get('/openapi.json', (event) =>
    jsonResponse(200, openApiDocument(), requestContext(event, deps.log), {
      ...extra,
      'cache-control': 'no-cache',
    }),
  );
  app.get('/docs', () => docsPage(extra));
  app.get(
    '/docs/:asset',
    guard(async (event) => docsAsset(event.context.params?.asset, extra)),
  );
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
