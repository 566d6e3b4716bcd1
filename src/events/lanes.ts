/**
 * One lane per endpoint in a worker: at most `concurrency` attempts in flight, the rest waiting
 * in arrival order. A lane that cannot keep up answers `busy`, so the caller parks the event on
 * the broker instead of holding a prefetch slot that another business's event needs:
 *
 * - up to `concurrency` may always wait;
 * - beyond that, an event waits only while the lane is making progress fast enough to start it
 *   within `waitBudgetMs` (estimated from its recent completions, or unknown yet: admitted);
 * - a lane with no completion for `waitBudgetMs` while full is stalled: new events are busy at
 *   once, and waiters beyond `concurrency` are sent back busy by a timer.
 *
 * So a hanging endpoint holds at most twice its concurrency of prefetch slots after
 * `waitBudgetMs`, a slow one only what it can serve within the budget, and a fast one as many
 * as the broker hands over (no parking at all for a single healthy busy endpoint).
 */
export interface Lanes {
  /** Runs `task` in the endpoint's lane, or resolves `BUSY` without running it. */
  run<T>(endpointId: string, task: () => Promise<T>): Promise<T | typeof BUSY>;
  /** Attempts in flight plus waiting, per endpoint (for status and tests). */
  backlog(endpointId: string): number;
}

export const BUSY = Symbol('busy');

interface Lane {
  active: number;
  /** Each waiter is called with true (its turn) or false (sent back busy). */
  readonly waiting: Array<(go: boolean) => void>;
  /** Last completion, or when the lane last went from idle to busy. */
  progressAt: number;
  /** Times of the recent completions, oldest first. */
  readonly completions: number[];
  timer?: NodeJS.Timeout;
}

const RECENT = 16;

export function createLanes(concurrency: number, waitBudgetMs: number): Lanes {
  const lanes = new Map<string, Lane>();

  const stalled = (lane: Lane, now: number) =>
    lane.active >= concurrency && now - lane.progressAt > waitBudgetMs;

  /** Milliseconds until the last waiter would start, or undefined while the rate is unknown. */
  function expectedWaitMs(lane: Lane, now: number): number | undefined {
    const recent = lane.completions;
    const first = recent[0];
    if (recent.length < 2 || first === undefined || now - first > 10 * waitBudgetMs)
      return undefined;
    const perMs = (recent.length - 1) / Math.max(1, now - first);
    return (lane.waiting.length + 1) / perMs;
  }

  function watch(id: string, lane: Lane): void {
    if (lane.timer || lane.waiting.length <= concurrency) return;
    lane.timer = setTimeout(() => {
      lane.timer = undefined;
      if (stalled(lane, Date.now()))
        for (const waiter of lane.waiting.splice(concurrency)) waiter(false);
      watch(id, lane);
    }, waitBudgetMs);
    lane.timer.unref();
  }

  function release(id: string, lane: Lane): void {
    const now = Date.now();
    lane.progressAt = now;
    lane.completions.push(now);
    if (lane.completions.length > RECENT) lane.completions.shift();
    const next = lane.waiting.shift();
    if (next) {
      next(true); // the slot passes to the waiter: `active` stays counted
      return;
    }
    lane.active -= 1;
    if (lane.active === 0) {
      clearTimeout(lane.timer);
      lanes.delete(id);
    }
  }

  return {
    async run(endpointId, task) {
      const now = Date.now();
      let lane = lanes.get(endpointId);
      if (!lane) {
        lane = { active: 0, waiting: [], progressAt: now, completions: [] };
        lanes.set(endpointId, lane);
      }
      if (lane.active < concurrency) {
        if (lane.active === 0) lane.progressAt = now;
        lane.active += 1;
      } else {
        if (lane.waiting.length >= concurrency) {
          if (stalled(lane, now)) return BUSY;
          const wait = expectedWaitMs(lane, now);
          if (wait !== undefined && wait > waitBudgetMs) return BUSY;
        }
        const current = lane;
        const go = await new Promise<boolean>((resolve) => {
          current.waiting.push(resolve);
          watch(endpointId, current);
        });
        if (!go) return BUSY;
      }
      try {
        return await task();
      } finally {
        release(endpointId, lane);
      }
    },
    backlog(endpointId) {
      const lane = lanes.get(endpointId);
      return lane ? lane.active + lane.waiting.length : 0;
    },
  };
}
