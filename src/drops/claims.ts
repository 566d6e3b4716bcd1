import { WORK_FOLDER, type DropStore } from './stores/store.js';

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
  return (await store.rename(from, target)) ? { name, current: target, lost: false } : undefined;
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
    if (await store.rename(entry.name, target))
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
  if (await store.rename(held.current, target)) held.current = target;
  else held.lost = true;
}

/** Puts a claimed file back under its own name (after a transient failure), to be tried again. */
export async function release(store: DropStore, held: Claim): Promise<boolean> {
  return !held.lost && (await store.rename(held.current, held.name));
}

/**
 * Renews a claim every `intervalMs` while a file is worked on. `stop()` waits for a renewal in
 * flight: a renewal renames the claimed file, so it must never run while the file is settled.
 */
export function startHeartbeat(
  store: DropStore,
  held: Claim,
  workerId: string,
  intervalMs: number,
): { stop(): Promise<void> } {
  let beat: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beat = renew(store, held, workerId, Date.now()).catch(() => undefined);
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await beat;
    },
  };
}
