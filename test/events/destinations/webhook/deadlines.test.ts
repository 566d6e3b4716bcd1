import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDeadlines } from '../../../../src/events/destinations/webhook/deadlines.js';

describe('attempt deadlines (one sweeping timer for every attempt in flight)', () => {
  // The sweep runs on the fake clock: what is asserted is the order of time-out and sweep, not
  // how busy the machine is.
  beforeEach(() => vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] }));
  afterEach(() => vi.useRealTimers());

  it('aborts an attempt still running after the time-out, with a TimeoutError, and only it', async () => {
    const deadlines = createDeadlines(50);
    const slow = deadlines.start();
    const fast = deadlines.start();
    const aborted: string[] = [];
    slow.once('abort', () => aborted.push('slow'));
    fast.once('abort', () => aborted.push('fast'));
    deadlines.end(fast);
    expect(slow.aborted).toBe(false);
    vi.advanceTimersByTime(30);
    expect(aborted).toEqual([]); // not before the time-out
    vi.advanceTimersByTime(60); // time-out + one sweep (10 ms here)
    expect(aborted).toEqual(['slow']);
    expect(slow.aborted).toBe(true);
    expect(slow.reason?.name).toBe('TimeoutError');
    expect(fast.aborted).toBe(false);
    deadlines.close();
  });

  it('calls nothing once the listener is removed (the request ended first)', async () => {
    const deadlines = createDeadlines(20);
    const deadline = deadlines.start();
    let called = false;
    const listener = () => {
      called = true;
    };
    deadline.on('abort', listener);
    deadline.removeListener('abort', listener);
    vi.advanceTimersByTime(60);
    expect(deadline.aborted).toBe(true); // still expired, so undici sees it if it looks
    expect(called).toBe(false);
    deadlines.close();
  });
});
