import { listDeadLetters } from './cli/events/dead-letters.js';
import { replayDeadLetters } from './cli/events/replay.js';
import { statusOf } from './cli/status.js';
import type { Config } from './config.js';
import type { OpenedDrop } from './drops/open.js';
import { REPROCESS_STATUSES } from './drops/reprocess.js';
import type { DropRunner } from './drops/runner.js';
import type { OperatorActions } from './portal/operator-actions.js';

/**
 * The portal operator's actions, made of what the CLI runs: `status`'s view of a drop,
 * `reprocess` through the serving runner (so its claims and lease hold), `events replay`'s move
 * back to the delivery queue. Composed here, by main.ts, so the portal needs no part of the CLI.
 */
export interface OperatorActionsDependencies {
  readonly config: Readonly<Config>;
  readonly drops: readonly OpenedDrop[];
  /** The serving runner of a pipeline; undefined before the runners start. */
  readonly runner: (pipeline: string) => DropRunner | undefined;
  /** A business's webhook endpoints in force, to name a dead letter's (it carries an id). */
  readonly endpoints?: (businessId: string) => readonly { id: string; name: string }[];
}

/** Failing inputs listed per drop: the latest first. */
const FAILURES_SHOWN = 50;

export function createOperatorActions(deps: OperatorActionsDependencies): OperatorActions {
  const { config } = deps;
  const url = config.broker.url;
  return {
    drops: () => Promise.all(deps.drops.map((drop) => statusOf(drop, FAILURES_SHOWN))),
    async reprocess(pipeline, sha256) {
      const runner = deps.runner(pipeline);
      if (!runner) return undefined;
      const report = await runner.reprocess({ statuses: REPROCESS_STATUSES, sha256 });
      if (report.standby) return { standby: true };
      const [input] = report.inputs;
      return input && { standby: false, ...input };
    },
    ...(url && {
      deadLetters: async () =>
        (await listDeadLetters({ url, events: config.events })).map((letter) => ({
          ...letter,
          endpoint:
            deps.endpoints?.(letter.businessId).find(({ id }) => id === letter.endpoint)?.name ??
            letter.endpoint,
        })),
      async replay(id) {
        const { replayed, heldBack } = await replayDeadLetters({
          url,
          events: config.events,
          selection: { id },
        });
        if (replayed.length > 0) return { end: 'replayed' };
        const [held] = heldBack;
        return held ? { end: 'held-back', why: held.why } : { end: 'not-found' };
      },
    }),
  };
}
