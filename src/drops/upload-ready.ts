import type { PipelineDefinition } from './definition.js';
import { RECEIPT_SUFFIX } from '../pipeline/receipt.js';
import type { DropEntry } from './stores/store.js';

/**
 * Which files of a listing may be taken. Default: safe — a file still being written is never
 * read. Per pipeline (Camel's vocabulary): `stable` (size and mtime unchanged over `checks`
 * looks), `marker` (a done-marker file next to it), `rename` (uploads arrive under a temporary
 * name). Temporary names, hidden files, receipts and markers are never inputs.
 */
export interface Readiness {
  /** The ready inputs of one look at the drop, and how many are still settling. */
  look(entries: readonly DropEntry[], now: number): { ready: DropEntry[]; settling: number };
}

export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

export function createReadiness(pipeline: PipelineDefinition): Readiness {
  const { strategy, checks, minAgeMs, markerSuffix, temporarySuffixes } = pipeline.readiness;
  const pattern = globToRegExp(
    pipeline.pattern ?? (pipeline.format === 'v1-csv' ? '*.csv' : '*.json'),
  );
  // name → what the previous looks saw
  const seen = new Map<string, { size: number; modifiedMs: number; looks: number }>();

  const isInput = (name: string) =>
    !name.startsWith('.') &&
    !name.endsWith(RECEIPT_SUFFIX) &&
    !(strategy === 'marker' && name.endsWith(markerSuffix)) &&
    !temporarySuffixes.some((suffix) => name.endsWith(suffix)) &&
    pattern.test(name);

  return {
    look(entries, now) {
      const names = new Set(entries.map((e) => e.name));
      const ready: DropEntry[] = [];
      let settling = 0;
      for (const entry of entries) {
        if (!isInput(entry.name)) continue;
        const previous = seen.get(entry.name);
        const unchanged =
          previous !== undefined &&
          previous.size === entry.size &&
          previous.modifiedMs === entry.modifiedMs;
        const looks = unchanged ? previous.looks + 1 : 1;
        seen.set(entry.name, { size: entry.size, modifiedMs: entry.modifiedMs, looks });
        // Only with a minimum age: mtimes have sub-millisecond precision and Date.now() does not,
        // so a file written this millisecond would otherwise look younger than zero.
        const oldEnough = minAgeMs === 0 || now - entry.modifiedMs >= minAgeMs;
        const isReady =
          strategy === 'marker'
            ? names.has(`${entry.name}${markerSuffix}`)
            : strategy === 'rename'
              ? true
              : looks >= checks;
        if (isReady && oldEnough) ready.push(entry);
        else if (strategy === 'stable' || !oldEnough) settling += 1;
      }
      for (const name of seen.keys()) if (!names.has(name)) seen.delete(name);
      return { ready, settling };
    },
  };
}
