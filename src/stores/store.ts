import { PassThrough, type Readable } from 'node:stream';
import { UnsafeName } from '../operator-errors.js';

/**
 * A drop: the folder (local directory, SFTP directory, S3 bucket + prefix) where a partner
 * leaves files. Every source is one implementation of this small interface; everything else
 * — readiness, claims, spooling, receipts, settling — is written once on top of it
 * (src/drops/runner.ts) and tested once against all of them (the contract suite).
 *
 * Names are relative to the drop, `/`-separated, e.g. `orders-1.csv` or `processed/orders-1.csv`.
 * An implementation never resolves a name outside the drop (no `..`, no absolute paths).
 *
 * Errors are mapped once, by each implementation at its boundary (also for the bytes of a `read`
 * stream): the store not being there — refused or reset connections, timeouts, 5xx, throttling,
 * a mount gone — is `DropUnavailable` (src/errors.ts), an outage the engine waits out without
 * using an attempt; a refused permission is `DropAccessDenied`, an unsafe name `UnsafeName`.
 * The engine asks these types, never an error's shape.
 */
export interface DropEntry {
  /** Name relative to the drop; top-level entries have no `/`. */
  readonly name: string;
  readonly size: number;
  /** Last modification, ms since the epoch. */
  readonly modifiedMs: number;
}

/** What `write` takes: the bytes, or a local file to stream them from. */
export type WriteContent = string | Buffer | { readonly file: string };

export interface DropStore {
  /** `local`, `sftp` or `s3`. */
  readonly type: string;
  /** Where the drop is, for logs and receipts; never a secret. */
  readonly where: string;
  /**
   * Whether `rename` is atomic and fails when the target exists. True for local folders and
   * SFTP (posix-rename / link semantics); false for S3, where claims need a lease instead.
   */
  readonly atomicRename: boolean;
  /** Files directly in the drop (or in `folder`), not in subfolders. */
  list(folder?: string): Promise<DropEntry[]>;
  /** Facts of one file, or undefined when it is not there. */
  stat(name: string): Promise<DropEntry | undefined>;
  /** Streams a file's bytes. */
  read(name: string): Promise<Readable>;
  /**
   * Moves `from` to `to` (creating `to`'s folder). Resolves false when `from` is gone or `to`
   * already exists — another worker won the race — and never overwrites.
   *
   * `fresh`: the caller vouches that nobody else ever makes `to` (a claim name carries this
   * worker's id and the time). The store may then use its plain atomic rename, which a crash
   * cannot cut in half; without it, "never overwrite" is a link then an unlink, and a kill -9
   * between the two leaves the file under both names.
   */
  rename(from: string, to: string, options?: { readonly fresh?: boolean }): Promise<boolean>;
  /**
   * Writes a whole file so that no reader ever sees it half-written (temporary name, then rename).
   * `{ file }` copies a local file in bounded memory (a large receipt, a list of message ids).
   */
  write(name: string, content: WriteContent): Promise<void>;
  /** Removes a file; resolves when it is gone (also when it was already gone). */
  remove(name: string): Promise<void>;
  /**
   * Calls `onAppear` soon after a file appears at the top level of the drop (written or renamed
   * there), so the runner can look early; the poll stays the source of truth, and a missed or
   * spurious call costs nothing. Only stores that can (local folders). `ignore`: top-level
   * folder names never watched (the worker's own).
   */
  watch?(options: {
    readonly ignore: readonly string[];
    readonly onAppear: () => void;
    readonly onError: (error: Error) => void;
  }): { close(): Promise<void> };
  /** Releases connections. */
  close(): Promise<void>;
}

/** Folder names the worker keeps inside a drop (never listed as input). */
export const WORK_FOLDER = '.warehouse-ingest';

/** Refuses names that could leave the drop: absolute, `..`, backslashes, control characters. */
export function assertSafeName(name: string): void {
  // eslint-disable-next-line no-control-regex
  if (
    name === '' ||
    name.startsWith('/') ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
    /(^|\/)\.\.(\/|$)|\\|[\u0000-\u001f\u007f]/.test(name) ||
    name.length > 1024
  ) {
    throw new UnsafeName(name);
  }
}

/**
 * A read stream whose errors are mapped by `toDropError` (an outage mid-download becomes
 * `DropUnavailable`), so a store maps errors once also for the bytes it hands out. Destroying
 * the returned stream destroys `source`.
 */
export function mapStreamErrors(
  source: Readable,
  toDropError: (error: unknown) => Error,
): Readable {
  const out = new PassThrough();
  source.on('error', (error) => out.destroy(toDropError(error)));
  out.once('close', () => {
    if (!source.destroyed) source.destroy();
  });
  source.pipe(out);
  return out;
}
/** Time limit of every call to a remote store, in ms, unless its \`source.timeoutMs\` says otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export const TIMEOUT_DESCRIPTION = 'Time limit of every call to the store, in ms.';
