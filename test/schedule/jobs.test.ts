import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startJob } from '../../src/schedule.js';

/** A logger at debug whose lines the test reads. */
function capture() {
  const lines: Array<{ level: string; msg: string; job?: string; reason?: string }> = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  return { log, lines };
}

const EVERY_SECOND = '* * * * * *';

describe('scheduled jobs (node-cron)', () => {
  it('runs a cron job at its ticks, in the given time zone', async () => {
    const { log } = capture();
    const ticks: number[] = [];
    const job = startJob({
      name: 'poll:tz',
      schedule: { cron: EVERY_SECOND, timezone: 'Asia/Kolkata' },
      log,
      run: async () => void ticks.push(Date.now()),
    });
    try {
      await expect.poll(() => ticks.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
      expect(ticks[1]! - ticks[0]!).toBeGreaterThanOrEqual(500);
    } finally {
      await job.stop();
    }
  });

  it('never overlaps: a run spanning several ticks runs once, the skipped ticks are logged at debug', async () => {
    const { log, lines } = capture();
    let runs = 0;
    let release!: () => void;
    const job = startJob({
      name: 'poll:slow',
      schedule: { cron: EVERY_SECOND },
      log,
      run: () => {
        runs += 1;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    try {
      const skipped = () =>
        lines.filter(
          (l) => l.level === 'debug' && l.job === 'poll:slow' && l.msg.includes('still going'),
        ).length;
      await expect.poll(skipped, { timeout: 6000 }).toBeGreaterThanOrEqual(2);
      expect(runs).toBe(1);
      release();
      await expect.poll(() => runs, { timeout: 5000 }).toBe(2); // the next tick after it ended runs again
    } finally {
      release();
      await job.stop();
    }
  });

  it('logs a failed run with the job name and runs again at the next tick', async () => {
    const { log, lines } = capture();
    let runs = 0;
    const job = startJob({
      name: 'reprocess:acme:nightly',
      schedule: { cron: EVERY_SECOND },
      log,
      run: async () => {
        runs += 1;
        if (runs === 1) throw new Error('drop unreachable');
      },
    });
    try {
      await expect.poll(() => runs, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
      const failed = lines.filter((l) => l.level === 'error');
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({
        job: 'reprocess:acme:nightly',
        reason: 'drop unreachable',
      });
      expect(failed[0]!.msg).toBe(
        'job reprocess:acme:nightly failed; it runs again at its next tick',
      );
    } finally {
      await job.stop();
    }
  });

  it('polls at once, then pollIntervalMs after each run ends; stop() waits for the run in hand', async () => {
    // The job's own timers on a fake clock: the times below are exact, and nothing waits.
    vi.useFakeTimers({ now: 0 });
    try {
      const { log } = capture();
      const started: number[] = [];
      let ended = 0;
      const job = startJob({
        name: 'poll:interval',
        schedule: { pollIntervalMs: 100 },
        log,
        run: async () => {
          started.push(Date.now());
          await new Promise((resolve) => setTimeout(resolve, 150));
          ended += 1;
        },
      });
      await vi.advanceTimersByTimeAsync(0);
      expect(started).toEqual([0]);
      await vi.advanceTimersByTimeAsync(249);
      expect(started).toEqual([0]); // 150 ms of run, then 100 ms of pause
      await vi.advanceTimersByTimeAsync(1);
      expect(started).toEqual([0, 250]);
      const stopping = job.stop();
      let stopped = false;
      void stopping.then(() => {
        stopped = true;
      });
      await vi.advanceTimersByTimeAsync(149);
      expect(stopped).toBe(false); // the run in hand is not over
      await vi.advanceTimersByTimeAsync(1);
      await stopping;
      expect(ended).toBe(2);
      await vi.advanceTimersByTimeAsync(10_000);
      expect(started).toEqual([0, 250]);
    } finally {
      vi.useRealTimers();
    }
  });
});
