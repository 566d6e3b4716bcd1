import { describe, expect, it } from 'vitest';
import { createDeadlines } from '../../../../src/events/destinations/webhook/deadlines.js';

describe('attempt deadlines (one sweeping timer for every attempt in flight)', () => {
  it('aborts an attempt still running after the time-out, with a TimeoutError, and only it', async () => {
    const deadlines = createDeadlines(50);
    const slow = deadlines.start();
    const fast = deadlines.start();
    const aborted: string[] = [];
    slow.once('abort', () => aborted.push('slow'));
    fast.once('abort', () => aborted.push('fast'));
    deadlines.end(fast);
    expect(slow.aborted).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(aborted).toEqual([]); // not before the time-out
    await new Promise((resolve) => setTimeout(resolve, 60)); // time-out + one sweep (10 ms here)
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
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(deadline.aborted).toBe(true); // still expired, so undici sees it if it looks
    expect(called).toBe(false);
    deadlines.close();
  });
});
