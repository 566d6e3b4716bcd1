/**
 * One lane per endpoint: at most `concurrency` attempts in flight and as many waiting, first
 * come first served. A full lane answers `busy` at once, so the caller can park the event on
 * the broker instead of holding a prefetch slot that another business's event needs.
 */
export interface Lanes {
  /** Runs `task` in the endpoint's lane, or resolves `busy` without running it. */
  run<T>(endpointId: string, task: () => Promise<T>): Promise<T | typeof BUSY>;
  /** Attempts in flight plus waiting, per endpoint (for status and tests). */
  backlog(endpointId: string): number;
}

export const BUSY = Symbol('busy');

interface Lane {
  active: number;
  readonly waiting: Array<() => void>;
}

export function createLanes(concurrency: number): Lanes {
  const lanes = new Map<string, Lane>();

  function release(id: string, lane: Lane): void {
    const next = lane.waiting.shift();
    if (next) {
      next();
      return;
    }
    lane.active -= 1;
    if (lane.active === 0) lanes.delete(id);
  }

  return {
    async run(endpointId, task) {
      let lane = lanes.get(endpointId);
      if (!lane) lanes.set(endpointId, (lane = { active: 0, waiting: [] }));
      if (lane.active >= concurrency) {
        if (lane.waiting.length >= concurrency) return BUSY;
        // The slot is handed over by release(): `active` stays counted for the waiter.
        await new Promise<void>((resolve) => lane.waiting.push(resolve));
      } else {
        lane.active += 1;
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
