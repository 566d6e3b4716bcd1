import { describe, expect, it } from 'vitest';
import type { InputState } from '../../../src/drops/state/input-state.js';
import {
  arrived,
  begin,
  crashed,
  dead,
  deferred,
  duplicateReceipted,
  exhausted,
  IllegalTransition,
  interrupted,
  KEPT_FAILURES,
  nextStep,
  progressed,
  published,
  rejected,
  retryScheduled,
  settled,
  settling,
  validated,
  withFailure,
} from '../../../src/drops/state/machine.js';

/** The input state machine alone: pure transitions, no store, no broker. */
const AT = '2026-01-02T03:04:05.000Z';
const LATER = '2026-01-02T03:05:05.000Z';
const arrival = { sha256: 'abc', file: 'a.csv', pipeline: 'p', location: 'a.csv', at: AT };
const summary = { status: 'accepted', records: 3 } as unknown as Parameters<
  typeof published
>[1]['response'];
const fresh = () => arrived(undefined, arrival);
const inTry = () => validated(begin(fresh()));

describe('input state machine', () => {
  it('arrived: a first arrival is received with no attempt used', () => {
    expect(fresh()).toMatchObject({
      sha256: 'abc',
      status: 'received',
      file: 'a.csv',
      attempts: 0,
      receivedAt: AT,
    });
    expect(fresh().failures).toBeUndefined();
  });

  it('arrived: a try that never recorded its end is noted as unfinished; its attempt stays used', () => {
    const crashed: InputState = { ...validated(begin(fresh())), receivedAt: 'earlier' };
    const next = arrived(crashed, { ...arrival, at: LATER });
    expect(next).toMatchObject({ status: 'received', attempts: 1, receivedAt: 'earlier' });
    expect(next.failures).toEqual([
      expect.objectContaining({ kind: 'unfinished', attempt: 1, at: LATER }),
    ]);
  });

  it('crashed: a killed try that got records confirmed gives its attempt back; one that did not keeps it', () => {
    // The fifth try of a file: four earlier ones died, and so did this one, at 4000 of 8000 confirmed.
    const killedAt = (confirmed: number, attempts: number, resumeFrom = 0) => {
      let state: InputState = { ...fresh(), attempts: attempts - 1 };
      if (resumeFrom > 0)
        state = { ...state, resume: { confirmed: resumeFrom, correlationId: 'c' } };
      state = validated(begin(state));
      if (confirmed > resumeFrom) state = progressed(state, { confirmed, correlationId: 'c' });
      return state;
    };
    const progressing = crashed(killedAt(4000, 5, 3000), { at: LATER });
    expect(progressing).toMatchObject({
      status: 'retry-scheduled',
      attempts: 4,
      nextAttemptAt: LATER,
      resume: { confirmed: 4000, correlationId: 'c' },
    });
    expect(progressing.failures?.at(-1)).toMatchObject({
      kind: 'unfinished',
      attempt: 5,
      reason: expect.stringContaining('1000 more record(s) (4000 in all)'),
    });
    // Killed during the validation pass (or before any new confirm): could be the file's doing.
    const stuck = crashed(killedAt(3000, 5, 3000), { at: LATER });
    expect(stuck).toMatchObject({ status: 'retry-scheduled', attempts: 5 });
    expect(stuck.failures?.at(-1)).toMatchObject({ kind: 'unfinished', attempt: 5 });
    expect(nextStep(stuck, arrived(stuck, arrival), { maxAttempts: 5, now: 0 })).toEqual({
      step: 'give-up',
    });
    // A first try that confirmed anything at all made progress.
    expect(crashed(killedAt(1000, 1), { at: LATER }).attempts).toBe(0);
    // Only a try under way can have crashed.
    expect(() => crashed(dead(fresh()), { at: LATER })).toThrow(IllegalTransition);
  });

  it('arrived: a kill -9 storm never kills a file that keeps making progress', () => {
    // 8 chunks, each try killed after one more confirmed chunk: 8 kills, retry.maxAttempts 5.
    let state = fresh();
    for (let chunk = 1; chunk <= 8; chunk++) {
      state = validated(begin(state));
      state = progressed(state, { confirmed: chunk * 1000, correlationId: 'c' });
      state = arrived(state, { ...arrival, at: LATER });
      expect(nextStep(state, state, { maxAttempts: 5, now: 0 })).toEqual({ step: 'try' });
    }
    expect(state).toMatchObject({ status: 'received', attempts: 0, resume: { confirmed: 8000 } });
  });

  it('arrived: published bytes never start a try', () => {
    const done = published(inTry(), { response: summary, processedAt: AT });
    expect(() => arrived(done, arrival)).toThrow(IllegalTransition);
  });

  it('begin counts the attempt before any work; only from received', () => {
    expect(begin(fresh()).attempts).toBe(1);
    expect(() => begin(inTry())).toThrow(IllegalTransition);
  });

  it('validated → published → settled: receipted, the receipt noted, the plan cleared', () => {
    const done = published(inTry(), { response: summary, processedAt: AT });
    expect(done).toMatchObject({ status: 'published', processedAt: AT, deferrals: 0 });
    const plan = {
      success: true,
      moveTo: 'processed/a.csv',
      receipt: 'processed/a.csv.receipt.json',
    };
    const planned = settling(done, plan);
    expect(planned.settling).toEqual(plan);
    const end = settled(planned, { receipt: plan.receipt, location: plan.moveTo });
    expect(end).toMatchObject({
      status: 'receipted',
      settling: undefined,
      receipt: plan.receipt,
      receipts: [plan.receipt],
      location: 'processed/a.csv',
    });
  });

  it('receipts are added, never replaced (a settle carried out again, a duplicate)', () => {
    const done = settled(published(inTry(), { response: summary, processedAt: AT }), {
      receipt: 'r1',
      location: undefined,
    });
    expect(duplicateReceipted(done, 'r2').receipts).toEqual(['r1', 'r2']);
    expect(settled(done, { receipt: 'r3', location: undefined }).receipts).toEqual(['r1', 'r3']);
  });

  it('rejected: the input is failed (its fault), its attempt used; dead on the last attempt', () => {
    const once = rejected(inTry(), { reason: 'bad', at: AT, maxAttempts: 3 });
    expect(once).toMatchObject({ status: 'failed', attempts: 1, lastError: 'bad' });
    expect(once.failures?.at(-1)).toMatchObject({ kind: 'rejected', attempt: 1 });
    expect(rejected(inTry(), { reason: 'bad', at: AT, maxAttempts: 1 }).status).toBe('dead');
    // Its receipt is pending until the settle: an outage in between settles it again, no new attempt.
    expect(once.receiptPending).toBe(true);
    const done = settled(once, { receipt: 'r', location: 'failed/a.csv' });
    expect(done).toMatchObject({ status: 'failed', receiptPending: undefined });
  });

  it('deferred (an outage) gives the attempt back and counts the deferral', () => {
    const state = deferred(inTry(), { reason: 'store down', at: AT, notBefore: LATER });
    expect(state).toMatchObject({
      status: 'retry-scheduled',
      attempts: 0,
      deferrals: 1,
      nextAttemptAt: LATER,
    });
    expect(state.failures?.at(-1)).toMatchObject({ kind: 'unavailable', attempt: 1 });
    // Any number of outages in a row never uses an attempt.
    let s = state;
    for (let i = 0; i < 10; i++)
      s = deferred(begin(arrived(s, arrival)), { reason: 'down', at: AT, notBefore: LATER });
    expect(s).toMatchObject({ attempts: 0, deferrals: 11 });
    expect(exhausted(s, 1)).toBe(false);
  });

  it('retryScheduled (our error) keeps the attempt and resets the deferrals', () => {
    const outage = deferred(inTry(), { reason: 'down', at: AT, notBefore: LATER });
    const state = retryScheduled(begin(arrived(outage, arrival)), {
      reason: 'bug',
      at: AT,
      notBefore: LATER,
    });
    expect(state).toMatchObject({ status: 'retry-scheduled', attempts: 1, deferrals: 0 });
    expect(state.failures?.at(-1)).toMatchObject({ kind: 'error', attempt: 1 });
    expect(exhausted(state, 1)).toBe(true);
    expect(dead(state)).toMatchObject({ status: 'dead', nextAttemptAt: undefined });
  });

  it('interrupted gives the attempt back, is due at once and keeps the resume point', () => {
    const state = interrupted(inTry(), { confirmed: 5, correlationId: 'c', at: AT });
    expect(state).toMatchObject({
      status: 'retry-scheduled',
      attempts: 0,
      nextAttemptAt: AT,
      resume: { confirmed: 5, correlationId: 'c' },
    });
    expect(state.failures?.at(-1)).toMatchObject({ kind: 'interrupted' });
    expect(
      interrupted(inTry(), { confirmed: 0, correlationId: 'c', at: AT }).resume,
    ).toBeUndefined();
    // The resumed try publishes the rest; once published the resume point is gone.
    const resumed = validated(begin(arrived(state, arrival)));
    expect(resumed.resume).toEqual({ confirmed: 5, correlationId: 'c' });
    expect(published(resumed, { response: summary, processedAt: AT }).resume).toBeUndefined();
  });

  it('progressed records each confirmed chunk; every kind of failed try keeps it for the next', () => {
    const at = progressed(inTry(), { confirmed: 2000, correlationId: 'c' });
    expect(at).toMatchObject({
      status: 'publishing',
      resume: { confirmed: 2000, correlationId: 'c' },
    });
    expect(() => progressed(fresh(), { confirmed: 1, correlationId: 'c' })).toThrow(
      IllegalTransition,
    );
    const facts = { reason: 'r', at: AT, notBefore: LATER };
    for (const failed of [deferred(at, facts), retryScheduled(at, facts)]) {
      const next = validated(begin(arrived(failed, arrival)));
      expect(next.resume).toEqual({ confirmed: 2000, correlationId: 'c' });
    }
    // A crash (no end recorded) keeps it too.
    expect(arrived(at, arrival).resume).toEqual({ confirmed: 2000, correlationId: 'c' });
    expect(published(at, { response: summary, processedAt: AT }).resume).toBeUndefined();
  });

  it('nextStep: dead and exhausted inputs are given up on; a scheduled retry waits unless ignored', () => {
    const now = Date.parse(AT);
    expect(nextStep(undefined, fresh(), { maxAttempts: 3, now })).toEqual({ step: 'try' });
    const gone = dead(fresh());
    expect(nextStep(gone, arrived(gone, arrival), { maxAttempts: 3, now })).toEqual({
      step: 'give-up',
    });
    const used = { ...fresh(), attempts: 3 };
    expect(nextStep(undefined, used, { maxAttempts: 3, now })).toEqual({ step: 'give-up' });
    const scheduled = retryScheduled(inTry(), { reason: 'x', at: AT, notBefore: LATER });
    const next = arrived(scheduled, arrival);
    expect(nextStep(scheduled, next, { maxAttempts: 3, now })).toEqual({
      step: 'not-due',
      due: Date.parse(LATER),
    });
    expect(nextStep(scheduled, next, { maxAttempts: 3, now, ignoreSchedule: true })).toEqual({
      step: 'try',
    });
  });

  it('refuses illegal transitions with a typed error that names them', () => {
    const done = published(inTry(), { response: summary, processedAt: AT });
    expect(() => rejected(done, { reason: 'x', at: AT, maxAttempts: 3 })).toThrow(
      IllegalTransition,
    );
    expect(() => dead(done)).toThrow(/dead is not allowed from published/);
    expect(() => validated(validated(begin(fresh())))).toThrow(IllegalTransition);
    expect(() => settling(fresh(), { success: true, receipt: 'r' })).toThrow(IllegalTransition);
    expect(() => duplicateReceipted(fresh(), 'r')).toThrow(IllegalTransition);
    const failed = rejected(inTry(), { reason: 'x', at: AT, maxAttempts: 3 });
    expect(() => deferred(failed, { reason: 'x', at: AT, notBefore: AT })).toThrow(
      IllegalTransition,
    );
  });

  it('keeps the last failures only', () => {
    let state = fresh();
    for (let i = 0; i < KEPT_FAILURES + 5; i++)
      state = withFailure(state, { kind: 'error', attempt: i, reason: `r${i}` }, AT);
    expect(state.failures).toHaveLength(KEPT_FAILURES);
    expect(state.failures?.at(-1)?.reason).toBe(`r${KEPT_FAILURES + 4}`);
    expect(state.lastError).toBe(`r${KEPT_FAILURES + 4}`);
  });
});
