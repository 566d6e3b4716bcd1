import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { H3 } from 'h3';
import { NotFound } from '../errors.js';
import type { Logger } from '../log.js';
import { openApiDocument } from './openapi.js';
import { jsonResponse, problemResponse, requestContext } from './respond.js';

/**
 * GET /docs: the OpenAPI document rendered by Swagger UI, whose browser bundle ships in the
 * swagger-ui-dist package and is served from here — the service may run with no internet, so
 * no CDN. Our own start-up script instead of the package's inline one, so the page runs under a
 * strict Content-Security-Policy.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>warehouse-ingest API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
`;

// validatorUrl null: the default sends the document to validator.swagger.io.
const START = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', validatorUrl: null, deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0 });\n`;

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// Swagger UI sets inline styles (React style attributes); scripts stay 'self' only.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

const folder = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const cache = new Map<string, Buffer>();

export function docsPage(headers: Record<string, string>): Response {
  return new Response(PAGE, {
    statusText: 'OK',
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'cache-control': 'no-cache',
      ...headers,
    },
  });
}

/** One of the page's assets; anything else (no directory listing, no `..`) is a 404. */
export function docsAsset(name: string | undefined, headers: Record<string, string>): Response {
  const common = {
    'cache-control': 'public, max-age=3600',
    'x-content-type-options': 'nosniff',
    ...headers,
  };
  if (name === 'start.js')
    return new Response(START, {
      statusText: 'OK',
      headers: { 'content-type': 'text/javascript; charset=utf-8', ...common },
    });
  const type = name !== undefined && Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!name || !type) throw new NotFound({ detail: 'No such asset of the API reference page.' });
  let bytes = cache.get(name);
  if (!bytes) cache.set(name, (bytes = readFileSync(path.join(folder, name))));
  return new Response(new Uint8Array(bytes), {
    statusText: 'OK',
    headers: { 'content-type': type, ...common },
  });
}

/**
 * `/openapi.json`, `/docs` and its assets on `app`: the partner-facing one (public, the default)
 * or the admin listener (`http.apiDocs: admin`).
 */
export function mountApiDocs(
  app: H3,
  log: Logger,
  headers: Record<string, string>,
  /** `servers` of the document (`http.publicUrls`); none: the document's own origin. */
  servers: readonly string[],
  /** Whether the demo tenant is configured (see OpenApiOptions). */
  demoCredential = false,
): void {
  let document: Record<string, unknown> | undefined;
  app.get('/openapi.json', (event) =>
    jsonResponse(
      200,
      (document ??= openApiDocument({ servers, demoCredential })),
      requestContext(event, log),
      { ...headers, 'cache-control': 'no-cache' },
    ),
  );
  app.get('/docs', () => docsPage(headers));
  app.get('/docs/:asset', (event) => {
    try {
      return docsAsset(event.context.params?.asset, headers);
    } catch (error) {
      return problemResponse(error, event, requestContext(event, log), headers);
    }
  });
}
