import type { Logger } from '../log.js';
import { startJob, type Job } from '../schedule.js';
import type { PipelineDefinition } from './definition.js';
import type { DropMetrics } from './metrics.js';
import { logReprocessReport, type ReprocessReport, type ReprocessSelection } from './reprocess.js';
import { WORK_FOLDER, type DropStore } from '../stores/store.js';

/**
 * What a runner's `start()` runs until `stop()`: the poll (`poll:<pipeline>`), woken early by the
 * store's watcher where it has one, and the pipeline's reprocessing jobs
 * (`reprocess:<pipeline>:<name>`).
 *
 * The watcher only makes the next look come sooner: a file that appears (written or renamed into
 * the top folder) triggers a look at once instead of at the end of the poll interval. The poll
 * keeps running and stays the source of truth, so a missed event (a network mount, a watcher
 * error) costs only the wait for the next poll. A `cron` schedule keeps its times: a partner who
 * may only be read at night is not read early because a file appeared.
 */
export function startPipelineJobs(options: {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly log: Logger;
  /** One look at the drop (and whatever follows it, e.g. counting the inputs). */
  readonly look: () => Promise<unknown>;
  readonly reprocess: (selection: ReprocessSelection) => Promise<ReprocessReport>;
  /** After each reprocessing job. */
  readonly afterReprocess: () => Promise<void>;
}): { stop(): Promise<void> } {
  const { pipeline, store, log } = options;
  const poll = startJob({
    name: `poll:${pipeline.name}`,
    schedule: pipeline.schedule,
    run: options.look,
    log,
  });
  const jobs: Job[] = [
    poll,
    ...pipeline.reprocess.map((job) => {
      const name = `reprocess:${pipeline.name}:${job.name}`;
      return startJob({
        name,
        schedule: { cron: job.cron, ...(job.timezone ? { timezone: job.timezone } : {}) },
        run: async () => {
          const since = Date.now() - job.sinceDays * 86_400_000;
          logReprocessReport(log, name, await options.reprocess({ statuses: job.statuses, since }));
          await options.afterReprocess();
        },
        log,
      });
    }),
  ];
  const watcher =
    store.watch && 'pollIntervalMs' in pipeline.schedule
      ? store.watch({
          ignore: [
            WORK_FOLDER,
            pipeline.after.processedFolder.split('/')[0]!,
            pipeline.after.failedFolder.split('/')[0]!,
          ],
          onAppear: () => poll.trigger(),
          onError: (error) =>
            log.warn(
              { reason: error.message },
              'the drop watcher failed; new files are still found by the poll',
            ),
        })
      : undefined;
  return {
    async stop() {
      await watcher?.close();
      await Promise.all(jobs.map((job) => job.stop()));
    },
  };
}

/**
 * A scheduled look as the poll runs it, reported: the gauges on each outcome (a standby worker,
 * which did not look, leaves them as they were), and a partner's drop that cannot be read logged
 * once when that begins (the job's error line, which this throws) and once when it ends, not at
 * every poll: such an outage may last hours, and `warehouse_ingest_drop_reachable` says it meanwhile.
 */
export function reportedLook(options: {
  readonly pipeline: string;
  /** Where the drop is, for the log line (no secret). */
  readonly where: string;
  readonly log: Logger;
  readonly metrics?: DropMetrics;
  readonly look: () => Promise<{ readonly standby?: boolean }>;
  /** After each look that went through (counting the inputs). */
  readonly after: () => Promise<void>;
}): () => Promise<unknown> {
  const { pipeline, log, metrics } = options;
  let failing = false;
  return () =>
    options.look().then(
      async (summary) => {
        if (!summary.standby) {
          metrics?.lookSucceeded(pipeline, Date.now());
          if (failing) log.info('the drop can be read again: looks go through');
          failing = false;
        }
        await options.after();
        return summary;
      },
      (error: unknown) => {
        metrics?.lookFailed(pipeline);
        const reason = (error as Error).message;
        if (failing) return log.debug({ reason }, 'could not read the drop (still)');
        failing = true;
        throw new Error(`could not read the drop at ${options.where}: ${reason}`, {
          cause: error,
        });
      },
    );
}
