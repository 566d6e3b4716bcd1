import { pipeline, Transform, type Readable } from 'node:stream';
import type { DropStore } from '../../src/stores/store.js';

/**
 * A real drop store seen through a tap: the test learns *when* the runner reaches a point of
 * its flow (a download under way, a state write) and injects its fault (kill, freeze) right
 * there, instead of guessing with sleeps. Every call still goes to the real server.
 */
export interface StoreTap {
  readonly store: DropStore;
  /** Bytes each read stream handed to the runner, by the name it was read under. */
  readonly delivered: Map<string, number>;
  /**
   * The next read of a name ending in `suffix` resolves `inProgress` with its first chunk's size,
   * then hands nothing more on until `release()`: the download is caught in the middle (the
   * runner stops pulling, so the client stops asking the server for more). `inProgress` rejects
   * if no such read delivers data within `timeoutMs`, so a test never waits for good.
   */
  holdNextRead(
    suffix: string,
    timeoutMs?: number,
  ): { inProgress: Promise<number>; release(): void };
  /** Awaited before every call; a fault injected here happens at an exact step of the flow. */
  before(hook: ((operation: string, name: string) => Promise<void>) | undefined): void;
}

export function tapStore(store: DropStore): StoreTap {
  const delivered = new Map<string, number>();
  let hold:
    | { suffix: string; reached: (bytes: number) => void; released: Promise<void> }
    | undefined;
  let hook: ((operation: string, name: string) => Promise<void>) | undefined;
  const call = async <T>(operation: string, name: string, fn: () => Promise<T>): Promise<T> => {
    await hook?.(operation, name);
    return fn();
  };

  function watched(name: string, source: Readable): Readable {
    const held = hold && name.endsWith(hold.suffix) ? hold : undefined;
    if (held) hold = undefined;
    let first = true;
    const out = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        delivered.set(name, (delivered.get(name) ?? 0) + chunk.length);
        if (held && first) {
          first = false;
          held.reached(chunk.length);
          void held.released.then(() => callback(null, chunk));
          return;
        }
        callback(null, chunk);
      },
    });
    // pipeline, not pipe: an error of the source (connection lost) reaches the runner.
    pipeline(source, out, () => {});
    return out;
  }

  return {
    delivered,
    store: {
      type: store.type,
      where: store.where,
      atomicRename: store.atomicRename,
      list: (folder) => call('list', folder ?? '', () => store.list(folder)),
      stat: (name) => call('stat', name, () => store.stat(name)),
      read: (name) => call('read', name, async () => watched(name, await store.read(name))),
      rename: (from, to, options) =>
        call('rename', `${from} -> ${to}`, () => store.rename(from, to, options)),
      write: (name, content) => call('write', name, () => store.write(name, content)),
      remove: (name) => call('remove', name, () => store.remove(name)),
      close: () => store.close(),
    },
    holdNextRead(suffix, timeoutMs = 30_000) {
      let reached!: (bytes: number) => void;
      let release!: () => void;
      let timer: NodeJS.Timeout | undefined;
      const inProgress = new Promise<number>((resolve, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no read of *${suffix} delivered data within ${timeoutMs} ms`)),
          timeoutMs,
        );
        reached = (bytes) => {
          clearTimeout(timer);
          resolve(bytes);
        };
      });
      const released = new Promise<void>((resolve) => (release = resolve));
      hold = { suffix, reached, released };
      return { inProgress, release };
    },
    before(next) {
      hook = next;
    },
  };
}
