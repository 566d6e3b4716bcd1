import { afterAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { portalSchema } from '../../src/config/portal-schema.js';
import { createMemoryState } from '../../src/http-state/memory.js';
import { createOperatorCheck } from '../../src/portal/operator-credentials.js';
import { createPasswordHasher, type PasswordHasher } from '../../src/portal/password-hasher.js';
import {
  createSignInGate,
  DEFAULT_SIGN_IN_LIMITS,
  type SignInLimits,
} from '../../src/portal/sign-in-gate.js';
import { deadLettersPage, replayNotice } from '../../src/portal/pages/dead-letters.js';
import { dropsPage, reprocessNotice } from '../../src/portal/pages/drops.js';
import { operatorSignInPage } from '../../src/portal/pages/operator-sign-in.js';
import {
  actor,
  businessOf,
  createSessionStore,
  isOperator,
  parseSubject,
  scopeOf,
} from '../../src/portal/sessions.js';

/** The operator's pieces alone: the password check, the session union and what it reads. */
const CHEAP = { ln: 10, r: 8, p: 1 };

/** A check over memory state and the hasher's thread, with the limits given. */
function operatorCheck(
  operators: { name: string; passwordHash: string }[],
  limits: Partial<SignInLimits> = {},
  now?: () => number,
) {
  const state = createMemoryState(now ? { now } : {});
  const hasher = createPasswordHasher();
  hashers.push(hasher);
  return createOperatorCheck({
    operators: () => operators,
    gate: createSignInGate(state, { ...DEFAULT_SIGN_IN_LIMITS, ...limits }),
    hasher,
  });
}
const hashers: PasswordHasher[] = [];
afterAll(async () => {
  await Promise.all(hashers.map((h) => h.close()));
});

describe('the operator password check', () => {
  it('signs in with the right password only, and says no more than "wrong" otherwise', async () => {
    const check = operatorCheck([
      { name: 'ops', passwordHash: await hashApiKey('correct horse battery', CHEAP) },
    ]);
    expect(await check('ops', 'correct horse battery', 'a')).toMatchObject({
      ok: true,
      name: 'ops',
    });
    expect(await check('ops', 'correct horse batterY', 'a')).toEqual({ ok: false, why: 'wrong' });
    // An unknown name is refused in the same words, after a hash is checked all the same.
    expect(await check('nobody', 'correct horse battery', 'a')).toEqual({
      ok: false,
      why: 'wrong',
    });
    expect(await check('', '', 'a')).toEqual({ ok: false, why: 'wrong' });
    expect(await operatorCheck([])('ops', 'x', 'a')).toEqual({ ok: false, why: 'none-configured' });
  });

  it("refuses a name from the address that guessed it wrong, never the operator's own address", async () => {
    let now = 0;
    const passwordHash = await hashApiKey('pw-of-ops-000000', CHEAP);
    const check = operatorCheck(
      [{ name: 'ops', passwordHash }],
      { failuresPerName: 2, perAddress: 100, windowSeconds: 60 },
      () => now,
    );
    expect(await check('ops', 'guess-1', 'attacker')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('ops', 'guess-2', 'attacker')).toEqual({ ok: false, why: 'wrong' });
    // Refused before any hashing, the right password too, from that address, until the window passes.
    expect(await check('ops', 'pw-of-ops-000000', 'attacker')).toEqual({
      ok: false,
      why: 'throttled',
      limit: 'name',
      retryAfterSeconds: 60,
    });
    // Five wrong tries for the name alone locked the real ops out (issue 38): not from its own address.
    expect(await check('ops', 'pw-of-ops-000000', 'operator')).toMatchObject({ ok: true });
    now = 60_001;
    expect(await check('ops', 'pw-of-ops-000000', 'attacker')).toMatchObject({ ok: true });
  });

  it('refuses random names from one address past its cap, and every address past the overall one', async () => {
    const passwordHash = await hashApiKey('pw-of-ops-000000', CHEAP);
    const check = operatorCheck([{ name: 'ops', passwordHash }], {
      perAddress: 3,
      overall: 5,
      windowSeconds: 60,
    });
    for (const name of ['r1', 'r2', 'r3'])
      expect(await check(name, 'x', 'flood')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('r4', 'x', 'flood')).toEqual({
      ok: false,
      why: 'throttled',
      limit: 'address',
      retryAfterSeconds: 20,
    });
    // Another address has its own three; the fleet's five are used up after two of them.
    expect(await check('r5', 'x', 'elsewhere')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('ops', 'pw-of-ops-000000', 'elsewhere')).toMatchObject({ ok: true });
    expect(await check('ops', 'pw-of-ops-000000', 'elsewhere')).toMatchObject({
      why: 'throttled',
      limit: 'overall',
    });
  });

  it('hashes a password of a lower cost again at the current one when it signs in', async () => {
    const check = operatorCheck([
      { name: 'ops', passwordHash: await hashApiKey('pw-of-ops-000000', CHEAP) },
    ]);
    const answer = await check('ops', 'pw-of-ops-000000', 'a');
    expect(answer).toMatchObject({
      ok: true,
      rehashed: expect.stringMatching(/^\$scrypt\$ln=17,r=8,p=1\$/),
    });
    const rehashed = answer.ok ? answer.rehashed : undefined;
    // The new hash is the same password's; at the current cost there is nothing to do.
    const current = operatorCheck([{ name: 'ops', passwordHash: rehashed ?? '' }]);
    expect(await current('ops', 'pw-of-ops-000000', 'a')).toEqual({ ok: true, name: 'ops' });
    expect(await current('ops', 'pw-of-ops-00000X', 'a')).toEqual({ ok: false, why: 'wrong' });
  });

  it('answers a throttled try 429 with Retry-After, a wrong one 401 without, and says when none are configured', async () => {
    const throttled = operatorSignInPage('throttled', 'ops', 30);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('30');
    expect(await throttled.text()).toContain('Too many tries.');
    const wrong = operatorSignInPage('wrong', 'ops');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('retry-after')).toBeNull();
    const none = operatorSignInPage('none-configured');
    expect(none.status).toBe(401);
    expect(await none.text()).toContain('no operators configured (portal.operators)');
  });

  it('takes operators in the configuration only with whole hashes and names of their own', async () => {
    const base = {
      enabled: true,
      sessionTtlMs: 60_000,
      maxLinkTtlMs: 86_400_000,
      signInLimits: DEFAULT_SIGN_IN_LIMITS,
    };
    const passwordHash = await hashApiKey('pw', CHEAP);
    expect(
      portalSchema.safeParse({ ...base, operators: [{ name: 'ops', passwordHash }] }).success,
    ).toBe(true);
    const twice = portalSchema.safeParse({
      ...base,
      operators: [
        { name: 'ops', passwordHash },
        { name: 'ops', passwordHash },
      ],
    });
    expect(twice.error?.issues.map((i) => i.message)).toEqual(['Two operators have the same name']);
    const cut = portalSchema.safeParse({
      ...base,
      operators: [{ name: 'ops', passwordHash: passwordHash.slice(0, -4) }],
    });
    expect(cut.error?.issues[0]?.path).toEqual(['operators', 0, 'passwordHash']);
    expect(
      portalSchema.safeParse({ ...base, operators: [{ name: 'a b', passwordHash }] }).success,
    ).toBe(false);
  });
});

describe('the session union', () => {
  it('reads the history as its business, or as the operator chose: one business or all', () => {
    const business = { role: 'business', businessId: 'ACME', id: 'a', expiresAt: 1 } as const;
    const all = {
      role: 'operator',
      operator: 'ops',
      business: null,
      id: 'b',
      expiresAt: 1,
    } as const;
    const one = { ...all, business: 'ACME' } as const;
    expect([isOperator(business), isOperator(all)]).toEqual([false, true]);
    expect(scopeOf(business)).toEqual({ businessId: 'ACME' });
    expect(scopeOf(all)).toEqual({ operator: true });
    expect(scopeOf(one)).toEqual({ businessId: 'ACME' });
    expect([businessOf(business), businessOf(all), businessOf(one)]).toEqual([
      'ACME',
      undefined,
      'ACME',
    ]);
    expect(actor(one)).toEqual({ operator: 'ops', businessId: 'ACME' });
  });

  it('reads a stored session as one of the two, never a mix; one from before operators is a business', () => {
    expect(parseSubject({ businessId: 'ACME', expiresAt: 1 })).toEqual({
      role: 'business',
      businessId: 'ACME',
    });
    expect(parseSubject({ role: 'operator', operator: 'ops', business: null })).toEqual({
      role: 'operator',
      operator: 'ops',
      business: null,
    });
    // An operator role without its name is no session, whatever else it carries.
    expect(parseSubject({ role: 'operator', businessId: 'ACME' })).toBeUndefined();
    expect(parseSubject({ role: 'admin', businessId: 'ACME' })).toBeUndefined();
    expect(parseSubject(null)).toBeUndefined();
  });

  it("keeps an operator's choice of business, and the session's expiry, across an update", async () => {
    let now = 1_000;
    const state = createMemoryState({ now: () => now });
    const sessions = createSessionStore({ ttlMs: 500, values: state.values, now: () => now });
    const session = await sessions.create({ role: 'operator', operator: 'ops', business: null });
    now = 1_200;
    await sessions.update(session, { role: 'operator', operator: 'ops', business: 'ACME' });
    expect(await sessions.get(session.id)).toEqual({
      role: 'operator',
      operator: 'ops',
      business: 'ACME',
      id: session.id,
      expiresAt: 1_500,
    });
    now = 1_500;
    expect(await sessions.get(session.id)).toBeUndefined();
  });
});

describe("the operator's pages", () => {
  const viewer = {
    role: 'operator',
    operator: 'ops',
    business: null,
    businesses: ['ACME'],
    csrf: 'csrf-1',
  } as const;
  const input = {
    sha256: 'a'.repeat(64),
    attempts: 1,
    lastError: '<b>bad</b>',
  };

  it('offers Reprocess on a failed or retry-scheduled input only, never on a dead one', async () => {
    const body = await dropsPage({
      viewer,
      drops: [
        {
          pipeline: 'acme',
          source: 'local:/drop',
          inputs: 3,
          byStatus: {
            received: 0,
            publishing: 0,
            published: 0,
            receipted: 0,
            failed: 1,
            'retry-scheduled': 1,
            dead: 1,
          },
          lastFailures: [
            { ...input, file: 'a.csv', status: 'failed' },
            {
              ...input,
              file: 'b.csv',
              status: 'retry-scheduled',
              nextAttemptAt: '2026-01-01T00:00:00Z',
            },
            { ...input, file: 'c.csv', status: 'dead' },
          ],
        },
      ],
    }).text();
    expect(body.match(/aria-label="Reprocess [a-c]\.csv"/g)).toEqual([
      'aria-label="Reprocess a.csv"',
      'aria-label="Reprocess b.csv"',
    ]);
    expect(body).toContain('Never reprocessed (attempts used up)');
    expect(body).toContain('2026-01-01T00:00:00Z');
    expect(body).toContain('&lt;b&gt;bad&lt;/b&gt;');
    expect(body.match(/name="csrf" value="csrf-1"/g)).toHaveLength(4); // two Reprocess forms, the picker and Sign out
  });

  it('says what a Reprocess and a Replay did', () => {
    expect(reprocessNotice('acme', undefined).tone).toBe('failed');
    expect(reprocessNotice('acme', { standby: true }).text).toContain(
      'another worker holds the lease',
    );
    expect(reprocessNotice('acme', { standby: false, outcome: 'accepted', attempt: 2 })).toEqual({
      tone: 'done',
      text: 'Reprocessed in acme: accepted (attempt 2).',
    });
    expect(
      reprocessNotice('acme', { standby: false, outcome: 'rejected', attempt: 3, reason: 'no' }),
    ).toEqual({ tone: 'failed', text: 'Reprocessed in acme: rejected (attempt 3) — no.' });
    expect(replayNotice('e1', { end: 'replayed' }).tone).toBe('done');
    expect(replayNotice('e1', { end: 'held-back', why: 'disabled by an operator' })).toEqual({
      tone: 'failed',
      text: 'Event e1 stays dead-lettered: its endpoint is disabled by an operator.',
    });
    expect(replayNotice('e1', { end: 'not-found' }).text).toBe(
      'Event e1 is no longer dead-lettered.',
    );
  });

  it('says when there is no broker, so nothing is dead', async () => {
    expect(await deadLettersPage({ viewer }).text()).toContain('runs without a message broker');
  });
});
