import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { signLink } from '../../src/portal/links.js';
import { LogCapture } from '../support/http-app.js';
import { startNginx, type TestNginx } from '../support/nginx.js';
import { tempFolder } from '../support/temp.js';

/**
 * The portal behind a real reverse proxy (Debian's nginx) that serves it under `/ingest`, as
 * docs/portal.md tells one to be set up: the link's page, its form, the sign-in's redirect and
 * cookie and the signed-in page all stay under `/ingest`, and the form's POST (whose `Origin` is
 * the proxy's address, not listed in `http.publicUrls`) is taken (issue 38).
 */
const temp = tempFolder('portal-behind-proxy-');
const SECRET = 'portal-secret-behind-a-proxy-0123456789';
let service: RunningService;
let nginx: TestNginx;
const logs = new LogCapture();

beforeAll(async () => {
  mkdirSync(path.join(temp.dir, 'pipelines'));
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${temp.dir}/pipelines`,
      'http: { trustProxyHops: 1 }',
      'history: { enabled: true }',
      'portal:',
      '  secret: { env: PORTAL_TEST_SECRET }',
    ].join('\n'),
  );
  service = await startService({
    env: {
      INGEST_CONFIG: config,
      INGEST_ENV: 'development',
      PORT: '0',
      ADMIN_PORT: '0',
      PORTAL_TEST_SECRET: SECRET,
    },
    log: createLogger({ destination: logs }),
  });
  // What docs/portal.md says the proxy must send.
  nginx = await startNginx(
    path.join(temp.dir, 'nginx'),
    (listen) => `${listen}
    location /ingest/ {
      proxy_pass ${service.url}/;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Prefix /ingest;
    }`,
  );
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await service?.stop();
});

describe('the portal behind a proxy under /ingest', () => {
  it('signs in with a link and serves every page, form, redirect and cookie under the prefix', async () => {
    const token = signLink(Buffer.from(SECRET), 'DEMO', Date.now() + 60_000);
    const opened = await fetch(`${nginx.origin}/ingest/portal/login?token=${token}`);
    expect(opened.status).toBe(200);
    const page = await opened.text();
    expect(page).toContain('action="/ingest/portal/login"');
    expect(page).toContain('href="/ingest/portal/assets/portal.css"');
    expect(page).not.toMatch(/(href|action|src)="\/portal/);
    const stylesheet = await fetch(`${nginx.origin}/ingest/portal/assets/portal.css`);
    expect(stylesheet.status).toBe(200);

    // The form's POST, as a browser sends it: the proxy's origin, listed nowhere in the configuration.
    const signedIn = await fetch(`${nginx.origin}/ingest/portal/login`, {
      method: 'POST',
      headers: {
        origin: nginx.origin,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/ingest/portal');
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    expect(cookie).toContain('; Path=/ingest/portal;');
    // The client's address, as the proxy saw it (X-Forwarded-For), in the sign-in's log line.
    const line = logs.lines.find((l) => l.msg === 'portal: signed in with a link');
    expect(line).toMatchObject({ businessId: 'DEMO', address: '127.0.0.1' });

    const batches = await fetch(`${nginx.origin}/ingest/portal`, {
      headers: { cookie: cookie.split(';')[0] ?? '' },
    });
    expect(batches.status).toBe(200);
    const html = await batches.text();
    expect(html).toContain('href="/ingest/portal/records"');
    expect(html).toContain('action="/ingest/portal/logout"');
    expect(html).not.toMatch(/(href|action|src)="\/portal/);
  });

  it("still refuses another site's POST behind the proxy", async () => {
    const token = signLink(Buffer.from(SECRET), 'DEMO', Date.now() + 60_000);
    const refused = await fetch(`${nginx.origin}/ingest/portal/login`, {
      method: 'POST',
      headers: {
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(refused.status).toBe(403);
  });

  it('takes no prefix or origin from a client when no proxy is trusted', async () => {
    // Straight to the service, which trusts one proxy: a client's own headers are read as the
    // proxy's. Only a service reached through its proxy may trust it (docs/portal.md).
    const { forwardedPrefix, forwardedOrigin } = await import('../../src/portal/behind-proxy.js');
    const event = {
      req: new Request('http://127.0.0.1/portal', {
        headers: {
          'x-forwarded-prefix': '/ingest',
          'x-forwarded-proto': 'https',
          'x-forwarded-host': 'example.com',
        },
      }),
    } as Parameters<typeof forwardedPrefix>[0];
    expect(forwardedPrefix(event, 0)).toBeUndefined();
    expect(forwardedOrigin(event, 0)).toBeUndefined();
    expect(forwardedPrefix(event, 1)).toBe('/ingest');
    expect(forwardedOrigin(event, 1)).toBe('https://example.com');
    const hostile = {
      req: new Request('http://127.0.0.1/portal', {
        headers: { 'x-forwarded-prefix': '/a"><script>', 'x-forwarded-host': 'a b' },
      }),
    } as Parameters<typeof forwardedPrefix>[0];
    expect(forwardedPrefix(hostile, 1)).toBeUndefined();
    expect(forwardedOrigin(hostile, 1)).toBeUndefined();
  });
});
