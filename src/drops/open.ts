import path from 'node:path';
import type { ProfilesSource } from '../records/legacy/index.js';
import { spoolDirectory, type Config } from '../config.js';
import { ConfigError } from '../operator-errors.js';
import type { Logger } from '../log.js';
import type { DropMetrics } from './metrics.js';
import type { Ingest } from '../ingest/batch.js';
import type { InFlight } from '../shutdown.js';
import { readPipelines, type LoadedPipeline } from './definition.js';
import { createRabbitMqLease, OWN_LEASE } from './lease.js';
import { createDropRunner, type DropRunner } from './runner.js';
import { createDropStore } from '../stores/index.js';
import type { DropStore } from '../stores/store.js';

/** A partner pipeline definition with the store its files are dropped in. */
export interface OpenedDrop {
  readonly pipeline: LoadedPipeline;
  readonly store: DropStore;
}

/**
 * Every pipeline in `pipelinesDirectory` with its store, as start-up (and `lint`) reads them:
 * throws `ConfigError` naming file and field. Stores connect lazily; close them when done.
 */
export function openDrops(config: Readonly<Config>): OpenedDrop[] {
  // Every problem of every pipeline at once: a valid pipeline's secrets are read even when
  // another file is invalid, so one run of `lint` reports them all.
  const { pipelines, problems } = readPipelines(path.resolve(config.pipelinesDirectory), {
    tenants: config.tenants.map((t) => t.businessId),
  });
  const opened: OpenedDrop[] = [];
  try {
    for (const pipeline of pipelines) {
      try {
        opened.push({ pipeline, store: createDropStore(pipeline, pipeline.file) });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        problems.push(...error.problems);
      }
    }
    if (problems.length > 0) throw new ConfigError(problems);
  } catch (error) {
    void Promise.all(opened.map(({ store }) => store.close().catch(() => undefined)));
    throw error;
  }
  return opened;
}

/**
 * A drop's runner as configured. A store without atomic rename (S3) is coordinated through a
 * lease on the broker, so several workers can serve one drop; without a broker there is no
 * shared place for it, and one worker per such drop is the rule (said in the log and the docs).
 */
export function createConfiguredDropRunner(
  config: Readonly<Config>,
  { pipeline, store }: OpenedDrop,
  ingest: Ingest,
  log: Logger,
  metrics?: DropMetrics,
  /** @default the configuration's; `serve` passes the ones a reload keeps current */
  onboarding: ProfilesSource = config.onboarding,
): DropRunner {
  let lease = OWN_LEASE;
  if (!store.atomicRename && config.broker.url) {
    lease = createRabbitMqLease(
      {
        url: config.broker.url,
        pipeline: pipeline.name,
        reconnect: { ...config.broker.reconnect },
      },
      log.child({ pipeline: pipeline.name, component: 'lease' }),
    );
  } else if (!store.atomicRename) {
    log.warn(
      { pipeline: pipeline.name },
      `drop ${pipeline.name} (${store.type}) has no rename to claim files with, and without a broker no lease: run one worker for it`,
    );
  }
  return createDropRunner({
    pipeline,
    store,
    lease,
    ingest,
    onboarding,
    environment: config.environment,
    log,
    spoolDirectory: spoolDirectory(config),
    ...(metrics ? { metrics } : {}),
  });
}

/** One runner per opened drop, polling on its schedule; stopped and closed as one piece of work. */
export function startDropRunners(
  config: Readonly<Config>,
  drops: readonly OpenedDrop[],
  ingest: Ingest,
  log: Logger,
  metrics: DropMetrics,
  onboarding: ProfilesSource = config.onboarding,
): InFlight & {
  stores: { name: string; close(): Promise<void> };
  /** The running runner of a pipeline, for a reprocess asked while serving (the portal's). */
  runner(pipeline: string): DropRunner | undefined;
} {
  const running = drops.map(({ pipeline, store }) => {
    const runner = createConfiguredDropRunner(
      config,
      { pipeline, store },
      ingest,
      log,
      metrics,
      onboarding,
    );
    runner.start();
    log.info(
      { pipeline: pipeline.name, source: `${store.type}:${store.where}` },
      `watching drop ${pipeline.name}`,
    );
    return { runner, store, name: pipeline.name };
  });
  return {
    name: 'drops',
    async stop() {
      await Promise.all(running.map(({ runner }) => runner.stop()));
    },
    interrupt() {
      for (const { runner } of running) runner.interrupt();
    },
    runner: (pipeline) => running.find(({ name }) => name === pipeline)?.runner,
    stores: {
      name: 'drop stores',
      async close() {
        await Promise.all(running.map(({ store }) => store.close()));
      },
    },
  };
}
