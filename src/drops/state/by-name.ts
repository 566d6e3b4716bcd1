/**
 * What a worker remembers of a file by its name, in memory: the part of a try's state that has
 * no durable place. An input's durable state (input-state.ts) is keyed by the sha256 of its
 * bytes, so a file that fails before its bytes are known — it cannot be read, claimed or moved
 * (a refused permission, a bad name, an outage of the store) — has nowhere else to count its
 * failures. For a file whose try did record a retry, `notBefore` is only a cache of the state's
 * `nextAttemptAt`, kept so the runner does not claim and copy the file just to read it is not due.
 *
 *     (nothing) → backing-off → (nothing)      the file was handled, or left the drop
 *                     ↘ parked → (nothing)     it changed (size or time), or left the drop
 *
 * A worker restart forgets all of it: parked files are tried again, and a back-off that was
 * only a cache is read again from the durable state. The transitions are pure; the file handler
 * (try/handler.ts) keeps one per name.
 */
export type NameMemory =
  | {
      readonly status: 'backing-off';
      /** Failures in a row, of any kind: they space the retries out. */
      readonly failures: number;
      /** Failures counted towards parking: only those before the bytes were known, and not outages. */
      readonly counted: number;
      /** Not tried again before this time (ms since the epoch). */
      readonly notBefore: number;
    }
  | {
      readonly status: 'parked';
      /** The file's size and time when parked: a change means someone may have fixed it. */
      readonly size: number;
      readonly modifiedMs: number;
    };

/**
 * How a failure counts: `scheduled` — the try recorded a retry in the input's state, due at
 * `notBefore` (nothing counted here: the state counts its attempts); `outage` — the store, the
 * broker or the worker's disk was not there (never parks); `error` — the file could not be
 * handled before its bytes were known (counts towards parking).
 */
export type NameFailure =
  | { readonly kind: 'scheduled'; readonly notBefore: number }
  | { readonly kind: 'outage' | 'error' };

/** A failure of the file `facts` describes: the memory it leaves (backing off, or parked at the limit). */
export function failedByName(
  before: NameMemory | undefined,
  failure: NameFailure,
  {
    now,
    maxAttempts,
    delayMs,
    facts,
  }: {
    now: number;
    /** Failures before the bytes were known that park the file (`retry.maxAttempts`). */
    maxAttempts: number;
    /** The wait after the `n`th failure in a row (0-based): the caller's back-off, so this stays pure. */
    delayMs: (n: number) => number;
    facts: { readonly size: number; readonly modifiedMs: number } | undefined;
  },
): NameMemory {
  const prior = before?.status === 'backing-off' ? before : { failures: 0, counted: 0 };
  const failures = prior.failures + 1;
  const counted = prior.counted + (failure.kind === 'error' ? 1 : 0);
  if (counted >= maxAttempts)
    return { status: 'parked', size: facts?.size ?? -1, modifiedMs: facts?.modifiedMs ?? -1 };
  const notBefore = failure.kind === 'scheduled' ? failure.notBefore : now + delayMs(failures - 1);
  return { status: 'backing-off', failures, counted, notBefore };
}

/**
 * What the memory says when the file is seen again with `facts`: whether to leave it alone now,
 * and the memory to keep (a parked file that changed is forgotten).
 */
export function seenByName(
  memory: NameMemory | undefined,
  facts: { readonly size: number; readonly modifiedMs: number },
  now: number,
): {
  readonly wait: 'backing-off' | 'parked' | undefined;
  readonly memory: NameMemory | undefined;
} {
  if (memory?.status === 'parked') {
    if (memory.size === facts.size && memory.modifiedMs === facts.modifiedMs)
      return { wait: 'parked', memory };
    return { wait: undefined, memory: undefined };
  }
  if (memory?.status === 'backing-off' && memory.notBefore > now)
    return { wait: 'backing-off', memory };
  return { wait: undefined, memory };
}
