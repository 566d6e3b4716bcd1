import { createTask, validateDetailed, type ScheduledTask } from 'node-cron';
import type { Logger } from './log.js';

/**
 * Named jobs on a schedule: a pipeline's poll (`poll:<pipeline>`) and its reprocessing jobs
 * (`reprocess:<pipeline>:<name>`). Two kinds of trigger, one behaviour:
 *
 * - `{ pollIntervalMs }`: runs at once, then again that long after each run ends (a slow look
 *   never shortens the pause before the next);
 * - `{ cron, timezone? }`: node-cron fires at each matching time (5 fields, or 6 with seconds),
 *   in `timezone` (IANA) or the process's own.
 *
 * A job never overlaps itself: a tick while the previous run is still going is skipped (logged at
 * debug). A run that throws is logged with the job's name; the job simply runs again at its next
 * tick. The guard is ours rather than node-cron's `noOverlap`, so both triggers share it and the
 * skipped tick is ours to log (node-cron warns about it in its own words).
 */
export type JobSchedule =
  | { readonly pollIntervalMs: number }
  | { readonly cron: string; readonly timezone?: string };

export interface Job {
  readonly name: string;
  /**
   * Runs the job now instead of at its next tick (`pollIntervalMs` jobs; a cron job keeps its
   * times). During a run, the next run starts as soon as this one ends: an event that came while
   * a look was listing is never left for the whole interval.
   */
  trigger(): void;
  /** Stops triggering; resolves when the run in hand, if there is one, has ended. */
  stop(): Promise<void>;
}

export interface JobOptions {
  readonly name: string;
  readonly schedule: JobSchedule;
  readonly run: () => Promise<unknown>;
  readonly log: Logger;
}

export function startJob({ name, schedule, run, log }: JobOptions): Job {
  const jobLog = log.child({ job: name });
  let current: Promise<void> | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let task: ScheduledTask | undefined;
  let again = false;
  let loop: (() => void) | undefined;
  const next = 'cron' in schedule ? 'at its next tick' : `in ${schedule.pollIntervalMs} ms`;

  /** One tick: starts a run unless one is going. Resolves when the run it started ends. */
  const tick = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (current) {
      jobLog.debug(`job ${name}: the previous run is still going; this tick is skipped`);
      return Promise.resolve();
    }
    const started = (async () => {
      try {
        await run();
      } catch (error) {
        jobLog.error(
          { err: error, reason: (error as Error).message },
          `job ${name} failed; it runs again ${next}`,
        );
      }
    })();
    current = started.finally(() => (current = undefined));
    return current;
  };

  if ('cron' in schedule) {
    // The tick returns at once (never awaited by node-cron), so node-cron sees no overlap of its own.
    task = createTask(schedule.cron, () => void tick(), {
      name,
      ...(schedule.timezone ? { timezone: schedule.timezone } : {}),
      logger: {
        info: (message) => jobLog.debug(message),
        warn: (message) => jobLog.warn(message),
        error: (message) => jobLog.error(String(message)),
        debug: (message) => jobLog.debug(String(message)),
      },
    });
    void task.start();
  } else {
    const run = () => {
      clearTimeout(timer);
      void tick().then(() => {
        if (!stopped) timer = setTimeout(run, again ? 0 : schedule.pollIntervalMs);
        again = false;
      });
    };
    loop = run;
    run();
  }

  return {
    name,
    trigger() {
      if (stopped || !loop) return;
      if (current) again = true;
      else loop();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await task?.destroy();
      await current;
    },
  };
}

/** Why a cron expression is refused (node-cron's own check), or undefined when it is valid. */
export function cronProblem(expression: string): string | undefined {
  const checked = validateDetailed(expression);
  if (checked.valid) return undefined;
  return `Invalid cron expression: ${checked.errors.map((e) => e.message).join('; ')} (5 fields, or 6 with seconds first)`;
}

/** Why a time zone is refused, or undefined when the platform knows it (an IANA name such as Europe/London). */
export function timezoneProblem(zone: string): string | undefined {
  // Offsets and abbreviations ("+01:00", "CET") are not IANA zone names, whatever the platform accepts.
  if (!/^(UTC|[A-Za-z]+(?:\/[A-Za-z0-9_+-]+)+)$/.test(zone))
    return 'Expected an IANA time zone name, e.g. Europe/London or UTC';
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone });
    return undefined;
  } catch {
    return `Unknown time zone "${zone}" (expected an IANA name, e.g. Europe/London or UTC)`;
  }
}
