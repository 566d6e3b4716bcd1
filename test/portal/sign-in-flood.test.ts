/**
 * An unauthenticated flood of operator sign-ins (issue 38), on the real routes in an H3 app (no
 * socket), with the real API-key authenticator beside them: the flood's hashing does not hold up
 * a business's first API request, one address's random names are refused (429) before any
 * hashing, and the real operator signs in from elsewhere while it runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { H3 } from 'h3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { createMemoryState } from '../../src/http-state/memory.js';
import { createAuthenticator } from '../../src/http/auth.js';
import { createLogger } from '../../src/log.js';
import { createOperatorCheck } from '../../src/portal/operator-credentials.js';
import { createPasswordHasher, type PasswordHasher } from '../../src/portal/password-hasher.js';
import { mountPortal } from '../../src/portal/routes.js';
import { createSessionStore } from '../../src/portal/sessions.js';
import {
  createSignInGate,
  DEFAULT_SIGN_IN_LIMITS,
  type SignInLimits,
} from '../../src/portal/sign-in-gate.js';

const SECRET = Buffer.from('a-portal-secret-of-thirty-two-characters!');
const PASSWORD = 'the-real-operator-password';
/** 4 MiB a hash: what is asserted is order, not time, so the test needs no dearer one. */
const DEAR = { ln: 12, r: 8, p: 1 };
const FLOOD = 64;

const hashers: PasswordHasher[] = [];
afterAll(async () => {
  await Promise.all(hashers.map((h) => h.close()));
});

async function portal(hasher: PasswordHasher, limits: Partial<SignInLimits> = {}) {
  hashers.push(hasher);
  const app = new H3();
  const state = createMemoryState();
  const operators = [{ name: 'ops', passwordHash: await hashApiKey(PASSWORD, DEAR) }];
  mountPortal(app, {
    secret: SECRET,
    sessions: createSessionStore({ ttlMs: 60_000, values: state.values }),
    claims: state.claims,
    secureCookie: false,
    publicOrigins: [],
    log: createLogger({ level: 'silent' }),
    checkOperator: createOperatorCheck({
      operators: () => operators,
      gate: createSignInGate(state, { ...DEFAULT_SIGN_IN_LIMITS, ...limits }),
      hasher,
    }),
    isOperator: (name) => operators.some((o) => o.name === name),
    // The test's requests name their client in X-Forwarded-For, as one proxy of ours would.
    trustProxyHops: 1,
  });
  const signIn = async (
    name: string,
    password: string,
    address: string,
    accept = '*/*',
  ): Promise<Response> =>
    app.request('/portal/operator', {
      method: 'POST',
      headers: {
        accept,
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': address,
      },
      body: new URLSearchParams({ name, password }).toString(),
    });
  return { signIn, app };
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('a flood of operator sign-ins', () => {
  // `pool` is where the hashing ran before (libuv's pool, as API keys): the same test shows the
  // starvation there, so it would fail if the sign-ins' hashing went back to the pool.
  it.each([
    ['its own thread', 'worker', false],
    ["libuv's pool (before issue 38)", 'pool', true],
  ] as const)(
    'hashed on %s (%s), a cold API-key check waits for the flood: %s',
    async (_where, on, waits) => {
      // Limits high enough that every sign-in of the flood is hashed: what is measured is where.
      const hasher = createPasswordHasher({ on, maxQueued: FLOOD });
      const { signIn } = await portal(hasher, { perAddress: 1000, overall: 1000 });
      const auth = createAuthenticator({
        tenants: [
          {
            businessId: 'ACME',
            apiKeyHash: await hashApiKey('acme-key-0123456789', { ln: 10, r: 8, p: 1 }),
          },
        ],
        acceptAnyCredentials: false,
      });
      let answered = 0;
      const flood = Array.from({ length: FLOOD }, (_, i) =>
        signIn(`random-${i}`, 'guess', `198.51.100.${i}`).then((answer) => {
          answered += 1;
          return answer.status;
        }),
      );
      // Every sign-in has reached the hasher (hashing, waiting, or already answered: on a quiet
      // machine the pool's four threads finish the first hashes before the last sign-ins arrive,
      // so `pending` alone never reached the flood) before the business's first request comes.
      await vi.waitFor(() => expect(hasher.pending + answered).toBe(FLOOD), { timeout: 10_000 });
      await expect(auth.authenticate(basic('ACME', 'acme-key-0123456789'))).resolves.toBe('ACME');
      const answeredBeforeTheKey = answered;
      expect(await Promise.all(flood)).toEqual(Array(FLOOD).fill(401));
      // Ordering, not time: on its own thread the flood's hashes run one by one beside the key's
      // check, which is answered while nearly all of them still wait; on the pool the key's check
      // queues behind them (FIFO) and is answered after all but the last few.
      if (waits) expect(answeredBeforeTheKey).toBeGreaterThan(FLOOD / 2);
      else expect(answeredBeforeTheKey).toBeLessThan(FLOOD / 2);
    },
    120_000,
  );

  it("refuses one address's flood past its cap, and lets the operator in from another meanwhile", async () => {
    const hasher = createPasswordHasher();
    const { signIn } = await portal(hasher);
    // Random names, and guesses at the real operator's: five wrong tries for `ops` locked it out.
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      signIn(i % 2 === 0 ? 'ops' : `random-${i}`, `guess-${i}`, '203.0.113.7'),
    );
    await vi.waitFor(() => expect(hasher.pending).toBeGreaterThan(0), { timeout: 10_000 });
    const operator = await signIn('ops', PASSWORD, '192.0.2.10');
    expect(operator.status).toBe(303);
    expect(operator.headers.get('set-cookie')).toContain('portal_session=');
    const answers = await Promise.all(flood);
    const statuses = answers.map((a) => a.status);
    // The address's ten tries are hashed (and wrong); the other 54 never reach a hash.
    expect(statuses.filter((s) => s === 401)).toHaveLength(DEFAULT_SIGN_IN_LIMITS.perAddress);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(FLOOD - DEFAULT_SIGN_IN_LIMITS.perAddress);
    // A script gets problem details with Retry-After: 6 s until the address has a try again (10 per 60 s).
    const [first] = refused;
    expect(first?.headers.get('retry-after')).toBe('6');
    expect(first?.headers.get('content-type')).toBe('application/problem+json');
    expect(await first?.json()).toMatchObject({ status: 429, type: '/problems/too-many-requests' });
    // And after the flood, the operator still signs in from its own address.
    expect((await signIn('ops', PASSWORD, '192.0.2.10')).status).toBe(303);
  }, 60_000);

  it('shows a browser the sign-in page again, 429 with Retry-After', async () => {
    const { signIn } = await portal(createPasswordHasher(), { perAddress: 1 });
    const html = 'text/html,application/xhtml+xml';
    expect((await signIn('nobody', 'x', '203.0.113.8', html)).status).toBe(401);
    const page = await signIn('nobody', 'x', '203.0.113.8', html);
    expect(page.status).toBe(429);
    expect(page.headers.get('retry-after')).toBe('60');
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('Too many tries.');
  });

  it('shows an operator whose hash is below the current cost the new one, once, after signing in', async () => {
    const { signIn, app } = await portal(createPasswordHasher());
    const answer = await signIn('ops', PASSWORD, '192.0.2.20');
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/portal/operator/password-hash');
    const cookie = answer.headers.get('set-cookie')?.split(';')[0] ?? '';
    const shown = await app.request('/portal/operator/password-hash', { headers: { cookie } });
    const text = await shown.text();
    expect(text).toMatch(/<code>\$scrypt\$ln=17,r=8,p=1\$[^<]+<\/code>/);
    const again = await app.request('/portal/operator/password-hash', { headers: { cookie } });
    expect(await again.text()).not.toContain('$scrypt$');
    // To anyone not signed in as an operator, the page does not exist.
    expect((await app.request('/portal/operator/password-hash')).status).toBe(404);
  });

  it("hashes on a thread of lowered CPU priority (Linux), the service's other threads keeping theirs", async () => {
    const hasher = createPasswordHasher();
    hashers.push(hasher);
    await hasher.hash('a-password', { ln: 10, r: 8, p: 1 });
    // Each thread's nice value, from /proc (field 19 of its stat line).
    const nice = (tid: string) =>
      Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ')[16]);
    const values = readdirSync('/proc/self/task').map(nice);
    expect(values).toContain(19);
    expect(nice(String(process.pid))).toBe(0);
  });
});
