import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryState } from '../../src/http-state/memory.js';
import { parseTtl } from '../../src/cli/portal-link.js';
import { ConfigError } from '../../src/operator-errors.js';
import { html, raw } from '../../src/portal/html.js';
import { portalBaseUrl, preparePortal, type PortalSource } from '../../src/portal/index.js';
import { errorRows } from '../../src/portal/pages/batch.js';
import { readPortalSecret } from '../../src/portal/secret.js';
import {
  createSessionStore,
  csrfMatches,
  csrfToken,
  sessionCookie,
  sessionIdFrom,
} from '../../src/portal/sessions.js';
import { tempFolder } from '../support/temp.js';

/** The portal's pieces alone: escaping, sessions and CSRF, the secret, the cookie's flags. */
const temp = tempFolder('portal-pieces-');
const SECRET = Buffer.from('x'.repeat(32));

const source = (overrides: Partial<PortalSource> = {}): PortalSource => ({
  environment: 'development',
  dataDirectory: path.join(temp.dir, 'data'),
  portal: { enabled: true, sessionTtlMs: 60_000, maxLinkTtlMs: 86_400_000, operators: [] },
  http: { host: '0.0.0.0', port: 3000, publicUrls: [] },
  ...overrides,
});

describe('html', () => {
  it('escapes every interpolated value, and only what html made goes in as it is', () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>${'<b>'}</li>`]}</ul>`.text).toBe(
      '<ul>&lt;a&gt;<li>&lt;b&gt;</li></ul>',
    );
    expect(html`${false}${null}${undefined}${0}${raw('<hr>')}`.text).toBe('0<hr>');
  });
});

describe('sessions', () => {
  it('expire after their time, and end on sign-out; kept under a hash of their id', async () => {
    let now = 1_000;
    const state = createMemoryState({ now: () => now });
    const sessions = createSessionStore({ ttlMs: 500, values: state.values, now: () => now });
    const one = await sessions.create({ role: 'business', businessId: 'ACME' });
    const two = await sessions.create({ role: 'business', businessId: 'ACME' });
    expect(one.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(one.id).not.toBe(two.id);
    expect(await sessions.get(one.id)).toMatchObject({ role: 'business', businessId: 'ACME' });
    // What the store holds names no cookie: a copy of it signs nobody in.
    expect(state.values.get(`portal-session:${one.id}`)).toBeUndefined();
    await sessions.end(two.id);
    expect(await sessions.get(two.id)).toBeUndefined();
    now = 1_499;
    expect(await sessions.get(one.id)).toBeDefined();
    now = 1_500;
    expect(await sessions.get(one.id)).toBeUndefined();
  });

  it("takes a form's CSRF token only from its own session", () => {
    const token = csrfToken(SECRET, 'session-a');
    expect(csrfMatches(SECRET, 'session-a', token)).toBe(true);
    expect(csrfMatches(SECRET, 'session-b', token)).toBe(false);
    expect(csrfMatches(SECRET, 'session-a', undefined)).toBe(false);
    expect(csrfMatches(SECRET, 'session-a', `${token}x`)).toBe(false);
  });

  it('sets the cookie script-proof and same-site, Secure when asked, and reads it back', () => {
    const session = { role: 'business', id: 'abc', businessId: 'ACME', expiresAt: 61_000 } as const;
    expect(sessionCookie(session, true, 1_000)).toBe(
      'portal_session=abc; HttpOnly; SameSite=Strict; Path=/portal; Max-Age=60; Secure',
    );
    expect(sessionCookie(session, false, 1_000)).not.toContain('Secure');
    expect(sessionIdFrom('a=1; portal_session=abc; b=2')).toBe('abc');
    expect(sessionIdFrom(null)).toBeUndefined();
  });
});

describe('the portal secret and address', () => {
  it('creates one private secret per data folder outside production, and keeps it', () => {
    const first = readPortalSecret(source());
    const file = path.join(temp.dir, 'data', 'portal-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readPortalSecret(source())).toEqual(first);
    expect(first.length).toBeGreaterThanOrEqual(32);
  });

  it('requires a configured secret in production, and one long enough', () => {
    expect(() => readPortalSecret(source({ environment: 'production' }))).toThrow(ConfigError);
    const portal = { ...source().portal, secret: { env: 'PORTAL_TEST_SECRET' } };
    expect(() => readPortalSecret(source({ portal }), { PORTAL_TEST_SECRET: 'short' })).toThrow(
      /at least 32 characters/,
    );
    expect(() => readPortalSecret(source({ portal }), {})).toThrow(/Not set/);
    expect(
      readPortalSecret(source({ portal }), { PORTAL_TEST_SECRET: 'y'.repeat(40) }).toString(),
    ).toBe('y'.repeat(40));
  });

  it('marks the cookie Secure under TLS or an https public URL, and is off when disabled', () => {
    expect(preparePortal(source())?.secureCookie).toBe(false);
    expect(
      preparePortal(source({ http: { ...source().http, publicUrls: ['https://in.example.com'] } }))
        ?.secureCookie,
    ).toBe(true);
    expect(preparePortal(source({ http: { ...source().http, tls: {} } }))?.secureCookie).toBe(true);
    expect(
      preparePortal(source({ portal: { ...source().portal, enabled: false } })),
    ).toBeUndefined();
    expect(portalBaseUrl(source())).toBe('http://127.0.0.1:3000');
  });
});

describe('portal-link --ttl', () => {
  it('reads durations', () => {
    expect(['90s', '15m', '1h', '1d', '5000', 'h', '1w', '-1h'].map(parseTtl)).toEqual([
      90_000,
      900_000,
      3_600_000,
      86_400_000,
      5000,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe("a refusal's errors", () => {
  it("splits CSV line and column, JSON fields and field entries into the page's rows", () => {
    expect(
      errorRows({
        errors: [
          {
            index: 0,
            errors: ['line 3, column oOrderLines_Qty: Expected a number, received "12abc"'],
          },
          { index: 1, errors: ['identifiers.site: Required', 'line 7: Ragged row'] },
          { path: 'cursor', message: 'Unknown cursor' },
          { index: 2, errors: ['Something else'] },
        ],
      }),
    ).toEqual([
      {
        record: 1,
        line: 3,
        where: 'oOrderLines_Qty',
        message: 'Expected a number, received "12abc"',
      },
      { record: 2, where: 'identifiers.site', message: 'Required' },
      { record: 2, line: 7, message: 'Ragged row' },
      { where: 'cursor', message: 'Unknown cursor' },
      { record: 3, message: 'Something else' },
    ]);
    expect(errorRows(undefined)).toEqual([]);
  });
});
