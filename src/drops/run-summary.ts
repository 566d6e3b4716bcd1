import type { HandledOutcome } from '../vocabulary.js';

/** What one look at the drop did. */
export interface RunSummary {
  accepted: number;
  /** The sandbox's `accepted`: every record passed validation, nothing was published. */
  validated: number;
  rejected: number;
  duplicates: number;
  /** Given up on after `retry.maxAttempts` tries: settled as failed. */
  dead: number;
  /** Left in place (or put back) after a transient failure, to be tried again. */
  retried: number;
  /** Taken by another worker first. */
  skipped: number;
  /** Cut short by a stop and put back, its progress recorded: the next start publishes the rest. */
  interrupted: number;
  /** Kept files whose bytes were settled in place before (same content): left as they are. */
  alreadyDone: number;
  /** Names the store refuses (a line break, a backslash): left in the drop, reported once, listed by `status`. */
  unusableNames: number;
  /** Present but not ready yet: still arriving (being uploaded). */
  arriving: number;
  /** Ready, but waiting out the back-off after a transient failure. */
  backingOff: number;
  /** Left alone after `retry.maxAttempts` failures before its bytes could be read (see state/by-name.ts). */
  parked: number;
  /** Another worker holds the drop's lease: this one did not look (S3 with several workers). */
  standby: boolean;
}

export function emptySummary(): RunSummary {
  return {
    accepted: 0,
    validated: 0,
    rejected: 0,
    duplicates: 0,
    dead: 0,
    retried: 0,
    skipped: 0,
    interrupted: 0,
    alreadyDone: 0,
    unusableNames: 0,
    arriving: 0,
    backingOff: 0,
    parked: 0,
    standby: false,
  };
}

/** Counts how one file ended in the look's summary. */
export function countOutcome(summary: RunSummary, outcome: HandledOutcome): void {
  if (outcome === 'duplicate') summary.duplicates += 1;
  else if (outcome === 'not-due') summary.backingOff += 1;
  else summary[outcome] += 1;
}
