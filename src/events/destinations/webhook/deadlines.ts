/**
 * The whole-attempt deadline of webhook deliveries (connect, send, answer and capped body
 * together), for every attempt in flight by one sweeping timer. `AbortSignal.timeout` per attempt
 * cost about 10 µs of CPU each (an EventTarget and a timer), a tenth of what a delivery costs
 * the service; undici takes any signal shaped like an EventEmitter (`once`, `removeListener`,
 * `on`, `aborted`, `reason`), so a plain object does. The sweep runs every tenth of the time-out
 * (10–250 ms), so an attempt is cut between `timeoutMs` and that much later; it stops while
 * nothing is in flight.
 */
export interface Deadline {
  readonly aborted: boolean;
  readonly reason: Error | undefined;
  on(event: 'abort', listener: () => void): void;
  once(event: 'abort', listener: () => void): void;
  removeListener(event: 'abort', listener: () => void): void;
}

export interface Deadlines {
  /** A deadline `timeoutMs` from now, to pass to undici as its `signal`. */
  start(): Deadline;
  /** The attempt ended: its deadline no longer matters. */
  end(deadline: Deadline): void;
  close(): void;
}

class Expiring implements Deadline {
  aborted = false;
  reason: Error | undefined;
  private listener: (() => void) | undefined;
  constructor(readonly at: number) {}
  /** undici asks for `on` to recognise an emitter, then listens with `once`; one listener either way. */
  on(_event: 'abort', listener: () => void): void {
    this.listener = listener;
  }
  once(_event: 'abort', listener: () => void): void {
    this.listener = listener;
  }
  removeListener(): void {
    this.listener = undefined;
  }
  expire(): void {
    this.aborted = true;
    this.reason = Object.assign(new Error('The attempt did not finish in time'), {
      name: 'TimeoutError',
    });
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}

export function createDeadlines(timeoutMs: number): Deadlines {
  const tickMs = Math.min(250, Math.max(10, Math.round(timeoutMs / 10)));
  const active = new Set<Expiring>();
  let timer: NodeJS.Timeout | undefined;

  function sweep(): void {
    const now = Date.now();
    for (const deadline of active)
      if (deadline.at <= now) {
        active.delete(deadline);
        deadline.expire();
      }
    if (active.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  return {
    start() {
      const deadline = new Expiring(Date.now() + timeoutMs);
      active.add(deadline);
      if (!timer) {
        timer = setInterval(sweep, tickMs);
        timer.unref();
      }
      return deadline;
    },
    end(deadline) {
      active.delete(deadline as Expiring);
    },
    close() {
      clearInterval(timer);
      timer = undefined;
      active.clear();
    },
  };
}
