import type { Logger } from '../log.js';
import { startJob, type Job } from '../schedule.js';
import type { PipelineDefinition } from './definition.js';
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
