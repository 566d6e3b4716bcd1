import { WORK_FOLDER, type DropStore } from '../stores/store.js';

/**
 * Claims on stores with atomic rename (local, SFTP): a worker takes a file by renaming it into
 * `.warehouse-ingest/claims/<claimed-at ms>~<worker>~<name>`. Of two workers exactly one wins;
 * a restarted or second worker never sees the file as new. A claim older than the lease is a
 * crashed worker's: another worker takes it over by renaming it to a fresh claim of its own.
 */
export const CLAIMS_FOLDER = `${WORK_FOLDER}/claims`;

export interface Claim {
  /** The file's name in the drop (where it goes back to on release). */
  readonly name: string;
  /** Where the claimed file is now; changes when the claim is renewed. */
  current: string;
  /** Set when another worker took the claim over (this worker missed its heartbeat). */
  lost: boolean;
}

/**
 * Claim names carry the worker's id and the time, so nobody else makes one: claiming, taking
 * over and renewing are plain atomic renames, which a kill -9 cannot leave half-done (the file
 * claimed and still in the drop would be worked on twice).
 */
const FRESH = { fresh: true } as const;

export function claimName(name: string, workerId: string, at: number): string {
  return `${CLAIMS_FOLDER}/${at}~${workerId}~${name}`;
}

export function parseClaim(
  claimed: string,
): { at: number; workerId: string; name: string } | undefined {
  const entryName = claimed.slice(CLAIMS_FOLDER.length + 1);
  const match = /^(\d+)~([^~]+)~(.+)$/.exec(entryName);
  return match ? { at: Number(match[1]), workerId: match[2]!, name: match[3]! } : undefined;
}

/** Claims the file `name`, found at `from` (another place than its name when reprocessed, e.g. `failed/<name>`). */
export async function claim(
  store: DropStore,
  name: string,
  workerId: string,
  now: number,
  from = name,
): Promise<Claim | undefined> {
  const target = claimName(name, workerId, now);
  return (await store.rename(from, target, FRESH))
    ? { name, current: target, lost: false }
    : undefined;
}

/** Claims older than `leaseMs`, taken over by this worker (each by exactly one worker). */
export async function takeOverStale(
  store: DropStore,
  workerId: string,
  leaseMs: number,
  now: number,
): Promise<Claim[]> {
  const taken: Claim[] = [];
  for (const entry of await store.list(CLAIMS_FOLDER)) {
    const parsed = parseClaim(entry.name);
    if (!parsed || now - parsed.at < leaseMs) continue;
    const target = claimName(parsed.name, workerId, now);
    if (await store.rename(entry.name, target, FRESH))
      taken.push({ name: parsed.name, current: target, lost: false });
  }
  return taken;
}

/** Renews a claim (a fresh time in its name), so a long file is not taken over while it is worked on. */
export async function renew(
  store: DropStore,
  held: Claim,
  workerId: string,
  now: number,
): Promise<void> {
  if (held.lost) return;
  const target = claimName(held.name, workerId, now);
  if (await store.rename(held.current, target, FRESH)) held.current = target;
  else held.lost = true;
}

/** Puts a claimed file back under its own name (after a transient failure), to be tried again. */
export async function release(store: DropStore, held: Claim): Promise<boolean> {
  return !held.lost && (await store.rename(held.current, held.name));
}

/**
 * This worker no longer holds the file it works on: another worker took its claim over (this one
 * missed its renewals), or the drop's lease went to another worker. The try stops where it is —
 * nothing more published, nothing settled, the file not put back: it is the other worker's now.
 */
export class ClaimLost extends Error {
  override readonly name = 'ClaimLost';
  constructor(file: string) {
    super(`Another worker has taken ${JSON.stringify(file)} over: this worker stops working on it`);
  }
}

export interface Heartbeat {
  /** Throws `ClaimLost` when the claim is no longer this worker's (asked before each chunk). */
  verify(): Promise<void>;
  /** Stops renewing; waits for a renewal in flight. */
  stop(): Promise<void>;
}

/**
 * Renews a claim every `intervalMs` while a file is worked on. Renewals and checks take turns: a
 * renewal renames the claimed file, so a check never looks while it moves, and `stop()` waits
 * for one in flight (it must never run while the file is settled).
 */
export function startHeartbeat(
  store: DropStore,
  held: Claim,
  workerId: string,
  intervalMs: number,
): Heartbeat {
  let turn: Promise<void> = Promise.resolve();
  const inTurn = (work: () => Promise<void>) => {
    const mine = turn.then(work);
    turn = mine.catch(() => undefined);
    return mine;
  };
  const timer = setInterval(() => {
    void inTurn(() => renew(store, held, workerId, Date.now())).catch(() => undefined);
  }, intervalMs);
  return {
    verify: () =>
      inTurn(async () => {
        if (!held.lost && !(await store.stat(held.current))) held.lost = true;
        if (held.lost) throw new ClaimLost(held.name);
      }),
    async stop() {
      clearInterval(timer);
      await turn;
    },
  };
}
