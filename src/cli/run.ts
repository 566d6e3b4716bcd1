import path from 'node:path';
import { loadConfig, type LoadConfigOptions } from '../config.js';
import { loadPipelineFiles } from '../drops/definition.js';
import { createConfiguredDropRunner } from '../drops/open.js';
import type { RunSummary } from '../drops/runner.js';
import { createDropStore } from '../stores/index.js';
import { createLogger, type Logger } from '../log.js';
import { configuredIngest } from '../ingest/configured.js';
import { openHistory } from '../history/index.js';
import { createPublisher } from '../publish/index.js';
import { Registry } from 'prom-client';
import { stopGracefully, type InFlight } from '../shutdown.js';

/** `run --once` on a drop whose lease another worker holds waits this long, then reports `standby`. */
const RUN_ONCE_LEASE_WAIT_MS = 60_000;

/**
 * `warehouse-ingest run <pipeline file>`: one drop, without the HTTP facade. With `once`, looks
 * until nothing is arriving, processes every ready file and resolves with what it did; it
 * rejects only when the drop itself cannot be read (an invalid file is a failure receipt).
 */
export async function runPipelineFile(
  file: string,
  options: LoadConfigOptions & {
    log?: Logger;
    once: boolean /** Aborted on SIGTERM/SIGINT: `--once` stops as `run` does. */;
    stopSignal?: AbortSignal;
  },
): Promise<{ summary?: RunSummary; stop(): Promise<void> }> {
  const config = loadConfig(options);
  const log = options.log ?? createLogger({ level: config.log.level });
  const [pipeline] = loadPipelineFiles([path.resolve(file)], {
    tenants: config.tenants.map((t) => t.businessId),
  });
  const store = createDropStore(pipeline!, pipeline!.file);
  const publisher = createPublisher(config, log);
  await publisher.start();
  // Its files' outcomes go to the history as `serve`'s do (the embedded file is shared with a
  // `serve` beside it): a partner's batches are there whichever process took them.
  const history = openHistory(config, log, new Registry());
  const runner = createConfiguredDropRunner(
    config,
    { pipeline: pipeline!, store },
    configuredIngest(config, publisher, undefined, history?.ends),
    log,
    undefined,
    config.onboarding,
  );
  let stopping: Promise<void> | undefined;
  const work: InFlight = {
    name: 'drop',
    stop: () => runner.stop(),
    interrupt: () => runner.interrupt(),
  };
  const stop = () =>
    (stopping ??= stopGracefully({
      graceMs: config.shutdown.graceMs,
      log,
      work: [work],
      close: [
        { name: 'drop store', close: () => store.close() },
        publisher,
        ...(history ? [{ name: 'history', close: () => history.close() }] : []),
      ],
    }));
  const onSignal = () => void stop().catch(() => undefined); // logged step by step; the caller sees it through `stop()` or `summary`
  if (options.stopSignal?.aborted) onSignal();
  else options.stopSignal?.addEventListener('abort', onSignal, { once: true });
  if (!options.once) {
    runner.start();
    return { stop };
  }
  try {
    return {
      summary: await runner.runOnce({
        waitForArriving: true,
        waitForLeaseMs: RUN_ONCE_LEASE_WAIT_MS,
      }),
      stop: async () => {},
    };
  } finally {
    // Done: close quietly, unless a signal began the logged stop (which this waits for).
    await (stopping ??
      runner
        .stop()
        .then(() => store.close())
        .then(() => publisher.close())
        .then(() => history?.close()));
  }
}
