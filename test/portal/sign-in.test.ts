/**
 * The portal's sign-in rules that a browser cannot easily provoke, on the real routes in an H3
 * app (no socket): a link signs in once even when the shared claims forget its nonce, and a
 * business no longer served (a reload removed its tenant) signs nobody in and loses its sessions.
 */
import { H3 } from 'h3';
import { describe, expect, it } from 'vitest';
import {
  type KeyClaims,
  SharedStateUnavailable,
  type ValueStore,
} from '../../src/http-state/state.js';
import { createMemoryState } from '../../src/http-state/memory.js';
import { signLink } from '../../src/portal/links.js';
import { mountPortal } from '../../src/portal/routes.js';
import { createSessionStore } from '../../src/portal/sessions.js';
import { createLogger } from '../../src/log.js';

const SECRET = Buffer.from('a-portal-secret-of-thirty-two-characters!');

function portal(options: { claims?: KeyClaims; values?: ValueStore; served: Set<string> }) {
  const app = new H3();
  const state = createMemoryState();
  mountPortal(app, {
    secret: SECRET,
    sessions: createSessionStore({ ttlMs: 60_000, values: options.values ?? state.values }),
    claims: options.claims ?? state.claims,
    secureCookie: false,
    publicOrigins: [],
    log: createLogger({ level: 'silent' }),
    isTenant: (businessId) => options.served.has(businessId),
  });
  const signIn = (token: string) =>
    app.request('/portal/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
  return { app, signIn };
}

const link = (businessId: string) => signLink(SECRET, businessId, Date.now() + 60_000);

describe('portal sign-in', () => {
  it('signs in once per link even when the shared claims forget it (evicted)', async () => {
    const forgetful: KeyClaims = { claim: () => undefined, settle: () => undefined };
    const { signIn } = portal({ claims: forgetful, served: new Set(['ACME']) });
    const token = link('ACME');
    expect((await signIn(token)).status).toBe(303);
    const again = await signIn(token);
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('already been used');
  });

  it('signs nobody in for a business no longer served, and ends its sessions', async () => {
    const served = new Set(['ACME', 'OTHER']);
    const { app, signIn } = portal({ served });
    const answer = await signIn(link('ACME'));
    expect(answer.status).toBe(303);
    const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
    const page = () => app.request('/portal', { headers: { cookie } });
    // Signed in: without a history the page has nothing to show, but it is the business's page.
    const signedIn = await page();
    expect(signedIn.status).not.toBe(401);
    expect(await signedIn.text()).not.toContain('not signed in');

    served.delete('ACME'); // a reload removed the tenant
    expect((await page()).status).toBe(401);
    served.add('ACME'); // and brought it back: the ended session stays ended
    expect((await page()).status).toBe(401);

    served.delete('OTHER');
    const refused = await signIn(link('OTHER'));
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('no longer serves');
  });

  it('keeps a link usable when the shared state fails during its sign-in (Redis away)', async () => {
    const state = createMemoryState();
    let down = true;
    const unavailable = () => {
      throw new SharedStateUnavailable('Redis is not reachable');
    };
    // The claims fail first, then (claims back) the sessions' store: each time, the next try signs in.
    const claims: KeyClaims = {
      claim: (...args) => (down ? unavailable() : state.claims.claim(...args)),
      settle: (...args) => state.claims.settle(...args),
    };
    const { signIn } = portal({ claims, served: new Set(['ACME']) });
    const token = link('ACME');
    expect((await signIn(token)).status).toBe(503);
    down = false;
    expect((await signIn(token)).status).toBe(303);
    expect((await signIn(token)).status).toBe(409); // and then it is used

    let valuesDown = true;
    const values: ValueStore = {
      get: (key) => state.values.get(key),
      set: (...args) => (valuesDown ? unavailable() : state.values.set(...args)),
      delete: (key) => state.values.delete(key),
    };
    const other = portal({ values, served: new Set(['ACME']) });
    const second = link('ACME');
    expect((await other.signIn(second)).status).toBe(503);
    valuesDown = false;
    expect((await other.signIn(second)).status).toBe(303);
  });
});
