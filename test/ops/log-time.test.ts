import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isoTime } from '../../src/log.js';

describe('the log time stamp', () => {
  afterEach(() => vi.useRealTimers());

  it("is pino's isoTime to the millisecond, within a second, across seconds and back in time", () => {
    vi.useFakeTimers();
    const at = (ms: number) => {
      vi.setSystemTime(ms);
      expect(isoTime()).toBe(pino.stdTimeFunctions.isoTime());
    };
    // One second's every millisecond, the next second, and a clock set back.
    const start = Date.UTC(2026, 10, 25, 16, 37, 28);
    for (let ms = 0; ms < 1000; ms++) at(start + ms);
    at(start + 1000);
    at(start + 999);
    at(start - 1);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), (ms) => at(ms)),
      { numRuns: 2000 },
    );
  });
});
