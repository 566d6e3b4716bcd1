import { createHash } from 'node:crypto';
import type { Environment } from '../config/schema.js';
import { toProblem, UnusableFileName } from '../errors.js';
import type { Logger } from '../log.js';
import { RECEIPT_SUFFIX, receiptName, serializeReceipt, type Receipt } from './receipts.js';
import type { PipelineDefinition } from './definition.js';
import { assertSafeName, type DropEntry, type DropStore } from '../stores/store.js';

/**
 * Files whose names the worker cannot use must not sit in the drop for ever, retried and logged
 * on every look. Two kinds:
 *
 * - **Too long** (stores with claims: local, SFTP, where a name is a file name of at most
 *   NAME_MAX = 255 bytes): the claim `<ms>~<worker>~<name>` and the receipts `<name>.receipt.json`,
 *   `<time>-<name>.receipt.json` need room the name leaves none of. The name itself is usable, so
 *   the file is moved to `failed/` under a shortened name, with a `rejected` receipt that names it
 *   in full (problem `unusable-file-name`).
 * - **Refused by the store** (control characters such as a newline, a backslash, `..`): no
 *   operation may address it, so nothing can be moved. It is reported once per version of the
 *   file (not on every look), counted in every look's summary, and listed by `status`.
 */
export const NAME_MAX_BYTES = 255;
/** `<ISO time>-` (finalPlace's prefix) or `.<ISO time>` (an earlier receipt set aside), plus `.receipt.json`. */
const RECEIPT_ROOM = 25 + RECEIPT_SUFFIX.length;
/** `<13-digit ms>~<worker>~` */
const claimRoom = (workerId: string) => 15 + Buffer.byteLength(workerId);

export interface UnusableName {
  readonly reason: string;
  /** Whether the store can still address the file (to move it to `failed/`). */
  readonly movable: boolean;
}

/** Why the worker cannot take a file by this name, or undefined when it can. */
export function unusableName(
  name: string,
  { workerId, claims }: { workerId: string; claims: boolean },
): UnusableName | undefined {
  try {
    assertSafeName(name);
  } catch {
    return {
      reason: 'its name has a control character (e.g. a line break), a backslash or `..`',
      movable: false,
    };
  }
  const bytes = Buffer.byteLength(name);
  const most = NAME_MAX_BYTES - Math.max(RECEIPT_ROOM, claimRoom(workerId));
  if (claims && bytes > most)
    return {
      reason: `its name is ${bytes} bytes long; at most ${most} leave room for the claim and receipt names (NAME_MAX is ${NAME_MAX_BYTES} bytes)`,
      movable: true,
    };
  return undefined;
}

/** A short, safe name for a file whose own name is too long: the start of it, a hash of all of it, its extension. */
export function shortenedName(name: string): string {
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && Buffer.byteLength(name.slice(dot)) <= 16 ? name.slice(dot) : '';
  let stem = name.slice(0, name.length - extension.length);
  while (Buffer.byteLength(stem) > 100) stem = stem.slice(0, -1);
  if (/[\uD800-\uDBFF]$/.test(stem)) stem = stem.slice(0, -1); // never half a surrogate pair
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 12);
  return `${stem}~${hash}${extension}`;
}

export interface NameGuard {
  /**
   * What became of a file whose name cannot be used: `moved` (to `failed/`, with a receipt),
   * `reported` (left where it is), `skipped` (another worker moved it first). Undefined: the
   * name is fine.
   */
  check(entry: DropEntry): Promise<'moved' | 'reported' | 'skipped' | undefined>;
  /** Forgets files no longer in the drop (so a file dropped again is reported again). */
  keepOnly(present: ReadonlySet<string>): void;
}

export function createNameGuard(options: {
  readonly store: DropStore;
  readonly pipeline: PipelineDefinition;
  readonly workerId: string;
  readonly environment: Environment;
  readonly log: Logger;
}): NameGuard {
  const { store, pipeline, log } = options;
  /** name → the version (size, mtime) last reported. */
  const reported = new Map<string, string>();

  async function moveToFailed(entry: DropEntry, reason: string): Promise<'moved' | 'skipped'> {
    const short = shortenedName(entry.name);
    const folder = pipeline.after.failedFolder;
    const taken = await store.stat(`${folder}/${short}`);
    const target = taken ? `${folder}/${Date.now()}-${short}` : `${folder}/${short}`;
    const receivedAt = new Date().toISOString();
    // The rename is the claim: of two workers, exactly one moves the file.
    if (!(await store.rename(entry.name, target))) return 'skipped';
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of await store.read(target)) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    const detail = `The file was not processed: ${reason}. It was moved to ${target}; give it a shorter name and drop it again.`;
    const receipt: Receipt = {
      outcome: 'rejected',
      environment: options.environment,
      response: toProblem(new UnusableFileName({ detail }), entry.name).problem,
      pipeline: pipeline.name,
      businessId: pipeline.businessId,
      kind: pipeline.kind,
      format: pipeline.format,
      file: {
        name: entry.name,
        size,
        sha256: hash.digest('hex'),
        source: `${store.type}:${store.where}`,
      },
      receivedAt,
      processedAt: new Date().toISOString(),
      attempt: 1,
    };
    await store.write(receiptName(target), serializeReceipt(receipt));
    log.warn(
      { file: JSON.stringify(entry.name), movedTo: target, reason },
      'file name cannot be used: moved to failed/ with a receipt, not processed',
    );
    return 'moved';
  }

  return {
    async check(entry) {
      const unusable = unusableName(entry.name, {
        workerId: options.workerId,
        claims: store.atomicRename,
      });
      if (!unusable) return undefined;
      if (unusable.movable) return moveToFailed(entry, unusable.reason);
      const version = `${entry.size}:${entry.modifiedMs}`;
      if (reported.get(entry.name) !== version) {
        reported.set(entry.name, version);
        log.error(
          { file: JSON.stringify(entry.name.slice(0, 300)), reason: unusable.reason },
          'file name cannot be used: the file is left in the drop, not processed; rename it (also listed by `status`)',
        );
      }
      return 'reported';
    },
    keepOnly(present) {
      for (const name of reported.keys()) if (!present.has(name)) reported.delete(name);
    },
  };
}
