import { performance } from 'node:perf_hooks';
import type { Logger } from './log.js';

/** A part of the service that holds work in flight when a stop begins: the HTTP server, the drop runners. */
export interface InFlight {
  /** Names it in the log: `http`, `drops`. */
  readonly name: string;
  /** Takes no new work; resolves once the work it holds is done (or given back). */
  stop(): Promise<void>;
  /** The grace time is over: cut what is left short, safely; `stop()` resolves soon after. */
  interrupt(): void;
}

/** A connection or store closed once no work is left: the publisher last, waiting for its outstanding confirms. */
export interface Closable {
  readonly name: string;
  close(): Promise<void>;
}

export interface StopPlan {
  /** `shutdown.graceMs`: how long work in flight may go on before it is interrupted. */
  readonly graceMs: number;
  readonly log: Logger;
  readonly work: readonly InFlight[];
  /** Closed in this order after the work. */
  readonly close: readonly Closable[];
}

/**
 * The stop sequence of `serve` and `run` (SIGTERM, SIGINT): every part stops taking work at once
 * and finishes what it holds; when the grace time is over, what is still in flight is interrupted
 * (a file keeps what the broker confirmed and goes back to its drop); then connections close,
 * the publisher last. Each step is logged with the time since the stop began. Rejects, after
 * every step was tried, if one of them failed.
 */
export async function stopGracefully({ graceMs, log, work, close }: StopPlan): Promise<void> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  const failures: unknown[] = [];
  log.info(
    { graceMs },
    `stopping: no new requests or files; the work in flight has ${graceMs} ms to finish`,
  );
  const finished = Promise.all(
    work.map((part) =>
      part.stop().then(
        () =>
          log.info({ step: part.name, ms: ms() }, `stop: ${part.name}: nothing in flight any more`),
        (error: unknown) => {
          failures.push(error);
          log.error(
            { step: part.name, ms: ms(), reason: (error as Error).message },
            `stop: ${part.name} did not stop cleanly`,
          );
        },
      ),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'grace over'>(
    (resolve) => (timer = setTimeout(() => resolve('grace over'), graceMs)),
  );
  if ((await Promise.race([finished, graceOver])) === 'grace over') {
    log.warn(
      { ms: ms(), graceMs },
      'stop: the grace time is over; interrupting the work still in flight',
    );
    for (const part of work) part.interrupt();
    await finished;
  }
  clearTimeout(timer);
  for (const part of close) {
    try {
      await part.close();
      log.info({ step: part.name, ms: ms() }, `stop: ${part.name} closed`);
    } catch (error) {
      failures.push(error);
      log.error(
        { step: part.name, ms: ms(), reason: (error as Error).message },
        `stop: ${part.name} did not close cleanly`,
      );
    }
  }
  log.info({ ms: ms() }, 'stopped');
  if (failures.length > 0) throw failures[0];
}
