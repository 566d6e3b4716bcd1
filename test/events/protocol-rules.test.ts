import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/events/destinations/webhook/deliver.js';
import { operatorPark, OPERATOR_BUSINESS } from '../../src/events/operator.js';
import { afterFailure } from '../../src/events/retry.js';
import { eventsSchema } from '../../src/events/config.js';
import { resolveEndpoints, webhookProblems } from '../../src/events/subscriptions.js';
import { testSecret } from '../support/webhook-receiver.js';

/** Pure: which retry queue a receiver's Retry-After picks, and how the header is read. */
describe('afterFailure with a Retry-After', () => {
  const schedule = [0, 1000, 5000, 60000];
  const delays = [1000, 5000, 15000, 60000];

  it('waits on the smallest existing delay at least as long as asked', () => {
    expect(afterFailure(schedule, 1, 2000, delays)).toEqual({
      action: 'retry',
      delayMs: 5000,
      attempt: 2,
    });
    expect(afterFailure(schedule, 1, 5000, delays)).toMatchObject({ delayMs: 5000 });
    expect(afterFailure(schedule, 1, 5001, delays)).toMatchObject({ delayMs: 15000 });
  });

  it('never waits less than the schedule says', () => {
    expect(afterFailure(schedule, 2, 1000, delays)).toMatchObject({ delayMs: 5000 });
    expect(afterFailure(schedule, 2, 0, delays)).toMatchObject({ delayMs: 5000 });
  });

  it("is capped by the schedule's longest step", () => {
    expect(afterFailure(schedule, 1, 3_600_000, delays)).toMatchObject({ delayMs: 60000 });
    // A defer queue longer than every step is not used for it.
    expect(afterFailure([0, 100, 200], 1, 900, [100, 200, 1000])).toMatchObject({ delayMs: 200 });
  });

  it('still counts an attempt, and gives up when the schedule has run out', () => {
    expect(afterFailure(schedule, 3, 2000, delays)).toMatchObject({ attempt: 4 });
    expect(afterFailure(schedule, 4, 2000, delays)).toEqual({ action: 'dead' });
  });

  it('without the delays, picks among the schedule steps', () => {
    expect(afterFailure(schedule, 1, 2000)).toMatchObject({ delayMs: 5000 });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-26T10:00:00Z');
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores what is neither', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('operatorPark', () => {
  const endpoints = new Map([[OPERATOR_BUSINESS, [{}]]]);
  const build = () => ({ content: Buffer.from('{}'), properties: { messageId: 'x', type: 'a.b' } });
  const endpoint = { id: 'e1', kind: 'webhook', host: 'h' } as const;

  it('parks an operator event for the delivery queue when an operator webhook is configured', () => {
    expect(operatorPark(endpoints, 'q', { ...endpoint, businessId: 'ACME' }, build)).toMatchObject({
      queue: 'q',
      headers: {},
    });
    expect(operatorPark(new Map(), 'q', { ...endpoint, businessId: 'ACME' }, build)).toBe(
      undefined,
    );
  });

  it('never about the operator webhook itself (no events about its own failures)', () => {
    expect(
      operatorPark(endpoints, 'q', { ...endpoint, businessId: OPERATOR_BUSINESS }, build),
    ).toBe(undefined);
  });
});

describe('the operator webhook in the configuration', () => {
  const operatorWebhook = (url: string) =>
    eventsSchema.parse({ operatorWebhook: { url, secret: { env: 'OPS_KEY' } } });

  it('is resolved as the one endpoint of the reserved business, its secret read like any other', () => {
    const config = {
      environment: 'development' as const,
      tenants: [],
      events: operatorWebhook('http://127.0.0.1:9/ops'),
    };
    const endpoints = resolveEndpoints(config, { OPS_KEY: testSecret(3) });
    expect(endpoints.get(OPERATOR_BUSINESS)?.map((e) => e.host)).toEqual(['127.0.0.1:9']);
    expect(() => resolveEndpoints(config, {})).toThrow(
      expect.objectContaining({
        problems: [
          expect.objectContaining({
            field: 'events.operatorWebhook.secret',
            message: expect.stringContaining('operator webhook'),
          }),
        ],
      }),
    );
  });

  it('keeps the production rules (https, no loopback) of every endpoint', () => {
    const problems = webhookProblems({
      environment: 'production',
      tenants: [],
      events: operatorWebhook('http://127.0.0.1/ops'),
    });
    expect(problems.map((p) => p.field)).toEqual(['events.operatorWebhook.url']);
  });
});
