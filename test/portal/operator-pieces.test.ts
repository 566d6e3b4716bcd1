import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { portalSchema } from '../../src/config/portal-schema.js';
import { createMemoryState } from '../../src/http-state/memory.js';
import { createOperatorCheck } from '../../src/portal/operator-credentials.js';
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

describe('the operator password check', () => {
  it('signs in with the right password only, and says no more than "wrong" otherwise', async () => {
    const check = createOperatorCheck([
      { name: 'ops', passwordHash: await hashApiKey('correct horse battery', CHEAP) },
    ]);
    expect(await check('ops', 'correct horse battery')).toEqual({ ok: true, name: 'ops' });
    expect(await check('ops', 'correct horse batterY')).toEqual({ ok: false, why: 'wrong' });
    // An unknown name is refused in the same words, after a hash is checked all the same.
    expect(await check('nobody', 'correct horse battery')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('', '')).toEqual({ ok: false, why: 'wrong' });
  });

  it('throttles tries per name, the right password too, until the bucket refills', async () => {
    let now = 0;
    const check = createOperatorCheck(
      [{ name: 'ops', passwordHash: await hashApiKey('pw-of-ops-000000', CHEAP) }],
      { tries: 2, windowSeconds: 60, now: () => now },
    );
    expect(await check('ops', 'guess-1')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('ops', 'guess-2')).toEqual({ ok: false, why: 'wrong' });
    expect(await check('ops', 'pw-of-ops-000000')).toEqual({ ok: false, why: 'throttled' });
    // Another name has its own bucket.
    expect(await check('other', 'x')).toEqual({ ok: false, why: 'wrong' });
    now = 30_000; // one try back (2 per 60 s)
    expect(await check('ops', 'pw-of-ops-000000')).toEqual({ ok: true, name: 'ops' });
  });

  it('takes operators in the configuration only with whole hashes and names of their own', async () => {
    const base = { enabled: true, sessionTtlMs: 60_000, maxLinkTtlMs: 86_400_000 };
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
