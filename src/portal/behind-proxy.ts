import type { H3, H3Event } from 'h3';

/**
 * The portal behind a reverse proxy of ours that serves it under a path of its own (issue 38):
 * the link says `https://example.com/ingest/portal/login`, the proxy strips `/ingest` and sends
 * `X-Forwarded-Prefix: /ingest`. The pages are written with paths from `/portal`; this puts the
 * prefix back in front of every one the browser is given (links, forms, the stylesheet, a
 * redirect's `Location`, the cookie's `Path`), in one place, so no page has to know.
 *
 * Read only from a proxy the configuration trusts (`http.trustProxyHops` > 0): a header a client
 * wrote itself would otherwise move the cookie's path or the forms' targets. The same proxy's
 * `X-Forwarded-Proto` and `X-Forwarded-Host` give the address the browser used, which a form's
 * `Origin` is compared with (guards.ts): TLS ending at the proxy no longer makes every POST
 * look foreign.
 */

/** A path of one or more plain segments, no trailing slash: nothing that could leave an attribute. */
const PREFIX = /^(?:\/[A-Za-z0-9._~-]+){1,8}$/;
const PROTO = /^https?$/;
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** The first value a header lists (the proxy nearest the browser wrote it; ours overwrite it). */
function first(event: H3Event, name: string): string | undefined {
  return event.req.headers.get(name)?.split(',')[0]?.trim() || undefined;
}

/** The path the trusted proxy serves the portal under, or undefined. */
export function forwardedPrefix(event: H3Event, trustProxyHops: number): string | undefined {
  if (trustProxyHops <= 0) return undefined;
  const prefix = first(event, 'x-forwarded-prefix')?.replace(/\/$/, '');
  return prefix && PREFIX.test(prefix) ? prefix : undefined;
}

/** The origin the browser used, as the trusted proxy says, or undefined. */
export function forwardedOrigin(event: H3Event, trustProxyHops: number): string | undefined {
  if (trustProxyHops <= 0) return undefined;
  const proto = first(event, 'x-forwarded-proto')?.toLowerCase();
  const host = first(event, 'x-forwarded-host');
  if (!proto || !host || !PROTO.test(proto) || !HOST.test(host)) return undefined;
  return new URL(`${proto}://${host}`).origin;
}

/** Every `/portal…` path of an answer with the prefix before it. */
async function prefixed(answer: Response, prefix: string): Promise<Response> {
  const headers = new Headers(answer.headers);
  const location = headers.get('location');
  if (location?.startsWith('/portal')) headers.set('location', prefix + location);
  const cookies = answer.headers.getSetCookie();
  if (cookies.length > 0) {
    headers.delete('set-cookie');
    for (const cookie of cookies)
      headers.append('set-cookie', cookie.replace('; Path=/portal', `; Path=${prefix}/portal`));
  }
  const html = (headers.get('content-type') ?? '').startsWith('text/html');
  const body = html
    ? (await answer.text()).replace(/ (href|action|src)="\/portal/g, ` $1="${prefix}/portal`)
    : answer.body;
  if (html) headers.delete('content-length');
  return new Response(body, { status: answer.status, statusText: answer.statusText, headers });
}

/** Puts the trusted proxy's prefix in every portal answer (routes.ts mounts it first). */
export function mountBehindProxy(app: H3, trustProxyHops: number): void {
  if (trustProxyHops <= 0) return;
  app.use('/portal/**', async (event, next) => {
    const prefix = forwardedPrefix(event, trustProxyHops);
    const answer = await next();
    return prefix && answer instanceof Response ? prefixed(answer, prefix) : answer;
  });
}
