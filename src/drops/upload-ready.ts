import picomatch from 'picomatch';
import type { PipelineDefinition } from './definition.js';
import { RECEIPT_SUFFIX } from './receipts.js';
import type { DropEntry } from '../stores/store.js';

/**
 * Which files of a listing may be taken. Per pipeline (Camel's vocabulary): `stable` (size and
 * mtime unchanged over `checks` looks spanning at least `quietMs`), `marker` (a done-marker file
 * next to it), `rename` (uploads arrive under a temporary name). Temporary names, hidden files,
 * receipts and markers are never inputs.
 *
 * `stable` only sees what a listing shows: a writer that pauses longer than `quietMs` between two
 * writes is taken in the middle. The quiet period is measured between our own looks (not from
 * the file's mtime), so a store whose clock runs behind ours cannot make a file look complete.
 * docs/file-drops.md#readiness says what each strategy guarantees.
 */
export interface Readiness {
  /** The ready inputs of one look at the drop, and how many are still arriving (`arriving`, vocabulary.ts). */
  look(
    entries: readonly DropEntry[],
    now: number,
  ): { ready: DropEntry[]; arriving: number; changed: boolean };
  /** How long `run --once` waits for a file seen changing now to become ready, if it stops changing. */
  readonly longestWaitMs: number;
}

/**
 * A drop's name pattern as a matcher: picomatch's globs (`*`, `?`, `[a-z]`, `{a,b}`, `!(x)`) on the
 * top-level names of the drop. Hidden names are excluded before the pattern is asked.
 */
export function namePattern(glob: string): (name: string) => boolean {
  return picomatch(glob, { dot: true });
}

/** Whether a top-level name is an input of the pipeline at all (its pattern; not hidden, temporary, a receipt or a marker). */
export function inputNames(pipeline: PipelineDefinition): (name: string) => boolean {
  const { strategy, markerSuffix, temporarySuffixes } = pipeline.readiness;
  const matches = namePattern(
    pipeline.pattern ??
      (pipeline.format.endsWith('csv')
        ? '*.csv'
        : pipeline.format === 'x12'
          ? '*.{x12,edi}'
          : '*.json'),
  );
  return (name) =>
    !name.startsWith('.') &&
    !name.endsWith(RECEIPT_SUFFIX) &&
    !(strategy === 'marker' && name.endsWith(markerSuffix)) &&
    !temporarySuffixes.some((suffix) => name.endsWith(suffix)) &&
    matches(name);
}

export function createReadiness(pipeline: PipelineDefinition): Readiness {
  const { strategy, checks, quietMs, intervalMs, minAgeMs, markerSuffix } = pipeline.readiness;
  const isInput = inputNames(pipeline);
  // name → what the previous looks saw, and since when (the first look that saw it as it is)
  const seen = new Map<
    string,
    { size: number; modifiedMs: number; looks: number; since: number }
  >();

  return {
    longestWaitMs:
      Math.max(minAgeMs, strategy === 'stable' ? quietMs : 0) + (checks + 1) * intervalMs,
    look(entries, now) {
      const names = new Set(entries.map((e) => e.name));
      const ready: DropEntry[] = [];
      let arriving = 0;
      let changed = false;
      for (const entry of entries) {
        if (!isInput(entry.name)) continue;
        const previous = seen.get(entry.name);
        const unchanged =
          previous !== undefined &&
          previous.size === entry.size &&
          previous.modifiedMs === entry.modifiedMs;
        const looks = unchanged ? previous.looks + 1 : 1;
        const since = unchanged ? previous.since : now;
        changed ||= !unchanged;
        seen.set(entry.name, { size: entry.size, modifiedMs: entry.modifiedMs, looks, since });
        // Only with a minimum age: mtimes have sub-millisecond precision and Date.now() does not,
        // so a file written this millisecond would otherwise look younger than zero.
        const oldEnough = minAgeMs === 0 || now - entry.modifiedMs >= minAgeMs;
        const isReady =
          strategy === 'marker'
            ? names.has(`${entry.name}${markerSuffix}`)
            : strategy === 'rename'
              ? true
              : looks >= checks && now - since >= quietMs;
        if (isReady && oldEnough) ready.push(entry);
        else if (strategy === 'stable' || !oldEnough) arriving += 1;
      }
      for (const name of seen.keys()) if (!names.has(name)) seen.delete(name);
      return { ready, arriving, changed };
    },
  };
}
