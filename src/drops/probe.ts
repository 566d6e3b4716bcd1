import { checkDrop } from './layout.js';
import type { DropStore } from '../stores/store.js';

/** One drop source as `/readyz` reports it. Names the pipeline, never the address or a secret. */
export interface DropCheck {
  readonly pipeline: string;
  /** `local`, `sftp`, `s3`. */
  readonly source: string;
  readonly reachable: boolean;
  readonly ms: number;
  /** Why it is not reachable: a short reason such as `timed out after 3000 ms` or `ENOENT`. */
  readonly problem?: string;
}

export interface ProbedDrop {
  readonly pipeline: string;
  readonly store: DropStore;
  /** The folders its settle moves files into (`settleFolders`): a regular file there is reported. */
  readonly settleFolders?: readonly string[];
}

/** Long enough for an SFTP handshake on a slow link; short enough for a readiness probe. */
export const DROP_PROBE_TIMEOUT_MS = 3000;

// A probe still running is shared, so frequent /readyz calls never stack up listings of one drop.
const inFlight = new WeakMap<DropStore, Promise<DropCheck>>();

/**
 * Lists each drop once, concurrently, each bounded by `timeoutMs`. A drop whose folder is missing
 * or whose settle folder is a regular file is not reachable either (`drop-folder-missing`,
 * `settle-folder-is-a-file`): nothing could be processed there.
 */
export function probeDrops(
  drops: readonly ProbedDrop[],
  timeoutMs = DROP_PROBE_TIMEOUT_MS,
): Promise<DropCheck[]> {
  return Promise.all(
    drops.map(({ pipeline, store, settleFolders = [] }) => {
      let probe = inFlight.get(store);
      if (!probe) {
        probe = probeDrop(pipeline, store, settleFolders, timeoutMs).finally(() =>
          inFlight.delete(store),
        );
        inFlight.set(store, probe);
      }
      return probe;
    }),
  );
}

async function probeDrop(
  pipeline: string,
  store: DropStore,
  settleFolders: readonly string[],
  timeoutMs: number,
): Promise<DropCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(timeoutMs)), timeoutMs);
  });
  try {
    await Promise.race([checkDrop(store, settleFolders), timeout]);
    return {
      pipeline,
      source: store.type,
      reachable: true,
      ms: Math.round(performance.now() - started),
    };
  } catch (error) {
    return {
      pipeline,
      source: store.type,
      reachable: false,
      ms: Math.round(performance.now() - started),
      problem: reason(error),
    };
  } finally {
    clearTimeout(timer);
  }
}

class ProbeTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/**
 * An error code (`ENOENT`, `ECONNREFUSED`, `NoSuchBucket`) when there is one: /readyz answers
 * without authentication, and a full message may name hosts, paths or users.
 */
function reason(error: unknown): string {
  if (error instanceof ProbeTimeout) return error.message;
  const code =
    (error as { code?: unknown; name?: unknown } | undefined)?.code ??
    (error as { name?: unknown } | undefined)?.name;
  return typeof code === 'string' && code !== 'Error' ? code : 'listing failed';
}
