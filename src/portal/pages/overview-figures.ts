import type { DayOutcomeCount } from '../../history/overview.js';
import { REFUSED_BATCH_OUTCOMES } from '../../vocabulary.js';

/**
 * The overview's figures from the history's counts: every day of the window (a day without
 * batches is a zero, not a gap), each split into accepted and refused. Pure, tested alone.
 */

/** One day as the overview shows it. */
export interface OverviewDay {
  /** `YYYY-MM-DD` (UTC). */
  readonly day: string;
  readonly acceptedBatches: number;
  readonly refusedBatches: number;
  readonly acceptedRecords: number;
  readonly refusedRecords: number;
}

/** A day being counted. */
type Counting = { -readonly [K in keyof OverviewDay]: OverviewDay[K] };

const DAY_MS = 86_400_000;
const refused = new Set<string>(REFUSED_BATCH_OUTCOMES);

/** The first instant of the UTC day `days - 1` before `now`'s: the window ends after `now`'s day. */
export function windowOf(now: number, days: number): { since: Date; until: Date } {
  const today = Math.floor(now / DAY_MS);
  return { since: new Date((today - days + 1) * DAY_MS), until: new Date((today + 1) * DAY_MS) };
}

/** `days` days ending with `now`'s (UTC), oldest first, each with its counts (zeros when none). */
export function overviewDays(
  counts: readonly DayOutcomeCount[],
  now: number,
  days: number,
): OverviewDay[] {
  const { since } = windowOf(now, days);
  const byDay = new Map<string, Counting>();
  const out: Counting[] = [];
  for (let i = 0; i < days; i++) {
    const day = new Date(since.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const entry = {
      day,
      acceptedBatches: 0,
      refusedBatches: 0,
      acceptedRecords: 0,
      refusedRecords: 0,
    };
    byDay.set(day, entry);
    out.push(entry);
  }
  for (const count of counts) {
    const entry = byDay.get(count.day);
    if (!entry) continue;
    if (refused.has(count.outcome)) {
      entry.refusedBatches += count.batches;
      entry.refusedRecords += count.records;
    } else {
      entry.acceptedBatches += count.batches;
      entry.acceptedRecords += count.records;
    }
  }
  return out;
}

/** `97.5 %` of attempts delivered; `—` with none. */
export function successRate(delivered: number, attempts: number): string {
  if (attempts === 0) return '—';
  const rate = (delivered / attempts) * 100;
  return `${rate === 100 || rate === 0 ? rate.toFixed(0) : rate.toFixed(1)} %`;
}
