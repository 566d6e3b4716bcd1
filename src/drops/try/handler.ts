import type { Logger } from '../../log.js';
import type { DropMetrics } from '../metrics.js';
import { reconnectDelay } from '../../backoff.js';
import { LocalResourcesExhausted } from '../../errors.js';
import { fileTrace } from '../../tracing.js';
import { release, type Claim } from '../claims.js';
import type { PipelineDefinition } from '../definition.js';
import type { DropEntry, DropStore } from '../../stores/store.js';
import { isUnavailable, RetryLater, type TryOptions } from './outcome.js';
import type { HandledOutcome, TryOutcome } from '../../vocabulary.js';
import { failedByName, seenByName, type NameFailure, type NameMemory } from '../state/by-name.js';

/**
 * What the runner does around each try: processing a claimed file, putting it back when the try
 * did not settle it, and keeping what the worker remembers of each file by name
 * (state/by-name.ts): a file that keeps failing before its bytes are known has no durable state
 * to count attempts in, so after `retry.maxAttempts` such failures it is parked — reported once,
 * at error level, and left alone until it changes (size or time) or the worker restarts. An
 * outage never parks a file.
 */

export interface FileHandler {
  /** Processes one claimed file and puts it back when the try did not settle it. */
  handle(held: Claim, tryOptions?: TryOptions): Promise<HandledOutcome>;
  /**
   * Gives a claimed file back to the drop (its own name). When that fails (the store is down),
   * the claim is kept in mind and given back by `putBackStranded` at the next look, not left to
   * wait out the whole lease.
   */
  putBack(held: Claim, log: Logger): Promise<void>;
  /** Gives back the claims a failed `putBack` left behind; returns how many went back. */
  putBackStranded(): Promise<number>;
  /** A file that failed before it was handled (its name refused, its claim failed). */
  failedBeforeTry(entry: DropEntry, error: unknown): void;
  /** Whether the file is waiting out a back-off, or parked. */
  waiting(entry: DropEntry, now: number): 'backing-off' | 'parked' | undefined;
  /** Forgets files no longer in the drop. */
  keepOnly(present: ReadonlySet<string>): void;
}

export function createFileHandler(options: {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly log: Logger;
  readonly processFile: (held: Claim, log: Logger, tryOptions?: TryOptions) => Promise<TryOutcome>;
  /** Told how long each try took and how it ended. */
  readonly metrics?: Pick<DropMetrics, 'fileHandled' | 'localResourcesExhausted'>;
}): FileHandler {
  const { pipeline, store, log, metrics } = options;
  /** What this worker remembers of files by name (state/by-name.ts): back-off and parking. */
  const memory = new Map<string, NameMemory>();
  /** The last facts seen of each file, to park it as it is. */
  const seen = new Map<string, DropEntry>();

  /** Notes a failure; returns when the file may be tried again (now, when it was parked). */
  function failed(name: string, error: unknown, fileLog: Logger): number {
    const now = Date.now();
    const next = failedByName(memory.get(name), nameFailure(error), {
      now,
      maxAttempts: pipeline.retry.maxAttempts,
      delayMs: (n) => reconnectDelay(n, pipeline.retry.initialDelayMs, pipeline.retry.maxDelayMs),
      facts: seen.get(name),
    });
    memory.set(name, next);
    if (next.status === 'backing-off') return next.notBefore;
    fileLog.error(
      { reason: (error as Error).message, failures: pipeline.retry.maxAttempts },
      `file parked: it failed ${pipeline.retry.maxAttempts} time(s) before its bytes could be read (retry.maxAttempts); not tried again until it changes or the worker restarts`,
    );
    return now;
  }

  /**
   * Claims this worker could not give back. Giving one back later is safe: it renames this
   * worker's own claim by its exact name, which fails harmlessly if another worker took it over
   * meanwhile (that renames it), so a file is never taken from under anyone.
   */
  const stranded = new Map<string, { held: Claim; log: Logger }>();

  async function putBack(held: Claim, fileLog: Logger): Promise<void> {
    if (held.current === held.name) return;
    try {
      await release(store, held);
      stranded.delete(held.name);
    } catch (error) {
      stranded.set(held.name, { held, log: fileLog });
      fileLog.warn(
        { reason: (error as Error).message },
        'could not give the claimed file back; trying again at the next look (the lease frees it otherwise)',
      );
    }
  }

  async function putBackStranded(): Promise<number> {
    let back = 0;
    for (const [name, { held, log: fileLog }] of stranded) {
      try {
        if (await release(store, held)) {
          back += 1;
          fileLog.info('gave back the claimed file a failed try had left behind');
        }
        stranded.delete(name); // back, or no longer this worker's to give
      } catch {
        // The store is still down: next look.
      }
    }
    return back;
  }

  /** One try; what it did is the outcome (never a throw: a failure backs off and puts the file back). */
  async function tryFile(
    held: Claim,
    fileLog: Logger,
    tryOptions: TryOptions,
  ): Promise<HandledOutcome> {
    let outcome: TryOutcome;
    try {
      outcome = await options.processFile(held, fileLog, tryOptions);
    } catch (error) {
      // The processor scheduled the retry in the input's state; an earlier failure (the file could not be read) backs off here.
      const notBefore = failed(held.name, error, fileLog);
      if (error instanceof RetryLater && error.scheduled) {
        await putBack(held, fileLog);
        return 'not-due';
      }
      const cause = error instanceof RetryLater && error.cause !== undefined ? error.cause : error;
      if (cause instanceof LocalResourcesExhausted)
        metrics?.localResourcesExhausted(pipeline.name, cause.resource);
      fileLog.warn(
        {
          err: cause,
          reason: (cause as Error).message,
          failures: failuresInARow(memory.get(held.name)),
          retryInMs: Math.max(0, notBefore - Date.now()),
        },
        cause instanceof LocalResourcesExhausted
          ? "file not processed: the worker ran out of local resources (not the file's fault; no attempt used): it stays in the drop and is tried again"
          : 'file not processed (transient): it stays in the drop and is tried again',
      );
      await putBack(held, fileLog);
      return 'retried';
    }
    if (outcome === 'interrupted') {
      await putBack(held, fileLog); // due again at once: a stop is no reason to back off
      return outcome;
    }
    memory.delete(held.name);
    return outcome;
  }

  return {
    putBack,
    putBackStranded,
    async handle(held, tryOptions) {
      // One trace per try of a file: on its log lines and on every message it publishes.
      const trace = fileTrace(pipeline.name);
      const started = performance.now();
      const fileLog = log.child({ file: held.name, traceId: trace.traceId });
      const outcome = await tryFile(held, fileLog, { ...tryOptions, trace });
      metrics?.fileHandled(pipeline.name, outcome, (performance.now() - started) / 1000);
      trace.end({
        attributes: {
          'warehouse_ingest.pipeline': pipeline.name,
          'warehouse_ingest.outcome': outcome,
        },
        failed: outcome === 'retried' || outcome === 'dead',
      });
      return outcome;
    },
    failedBeforeTry(entry, error) {
      seen.set(entry.name, entry);
      failed(entry.name, error, log.child({ file: JSON.stringify(entry.name.slice(0, 200)) }));
    },
    waiting(entry, now) {
      seen.set(entry.name, entry);
      const { wait, memory: kept } = seenByName(memory.get(entry.name), entry, now);
      if (kept) memory.set(entry.name, kept);
      else memory.delete(entry.name); // a parked file changed: someone may have fixed it
      return wait;
    },
    keepOnly(present) {
      for (const map of [memory, seen])
        for (const name of map.keys()) if (!present.has(name)) map.delete(name);
    },
  };
}

/** How a try's error counts for the file's name (state/by-name.ts). */
function nameFailure(error: unknown): NameFailure {
  if (error instanceof RetryLater) return { kind: 'scheduled', notBefore: error.notBefore };
  return { kind: isUnavailable(error) ? 'outage' : 'error' };
}

const failuresInARow = (memory: NameMemory | undefined) =>
  memory?.status === 'backing-off' ? memory.failures : undefined;
