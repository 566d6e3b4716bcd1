/**
 * The history as a command (`lineage`) opens it. PostgreSQL: the same store as `serve`. The
 * embedded one is the folder itself when no other process holds it; while `serve` holds it
 * (PGlite has one process per folder), the command reaches it through the unix socket `serve`
 * offers beside the folder (embedded/socket.ts), with the PostgreSQL adapter.
 */
import { existsSync } from 'node:fs';
import { HistoryUnavailable } from '../operator-errors.js';
import type { Logger } from '../log.js';
import { createEmbeddedHistory } from './embedded/index.js';
import { lockHolder } from './embedded/lock.js';
import { socketDirectory, socketFile } from './embedded/socket.js';
import { historyDirectory, historyStore, type HistorySource } from './index.js';
import { createPostgresHistory } from './postgres/index.js';
import type { HistoryStore } from './store.js';

export function commandHistoryStore(source: HistorySource, log: Logger): HistoryStore {
  if (source.history.url !== undefined) return historyStore(source, log);
  const directory = historyDirectory(source);
  const embedded = createEmbeddedHistory({ directory });
  let target: HistoryStore = embedded;
  const via =
    <K extends Exclude<keyof HistoryStore, 'name' | 'open' | 'close'>>(method: K) =>
    (...args: Parameters<HistoryStore[K]>) =>
      (target[method] as (...a: typeof args) => ReturnType<HistoryStore[K]>)(...args);
  return {
    name: 'embedded',
    async open() {
      try {
        await embedded.open();
        return;
      } catch (error) {
        const held =
          error instanceof HistoryUnavailable &&
          existsSync(socketFile(directory)) &&
          (await lockHolder(`${directory}.lock`)) !== undefined;
        if (!held) throw error;
        const served = createPostgresHistory({
          url: `postgres://postgres@${encodeURIComponent(socketDirectory(directory))}/postgres`,
          poolSize: 1,
        });
        try {
          await served.open();
        } catch (cause) {
          await served.close().catch(() => undefined);
          throw new HistoryUnavailable(
            `${(error as Error).message}; its socket ${socketFile(directory)} did not answer: ${(cause as Error).message}`,
            cause,
          );
        }
        target = served;
      }
    },
    write: via('write'),
    batches: via('batches'),
    records: via('records'),
    listBatches: via('listBatches'),
    listEvents: via('listEvents'),
    eventsAbout: via('eventsAbout'),
    undeliveredSince: via('undeliveredSince'),
    endpointActivity: via('endpointActivity'),
    event: via('event'),
    attempts: via('attempts'),
    endpointStates: via('endpointStates'),
    prune: via('prune'),
    close: () => target.close(),
  };
}
