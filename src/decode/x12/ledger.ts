import { randomBytes } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { type DropStore, WORK_FOLDER } from '../../stores/store.js';

/**
 * What the service remembers of its X12 exchanges with one partner, kept in the partner's own
 * drop beside the input states (`.warehouse-ingest/x12/<qualifier>-<id>/`), so that every worker
 * of the drop, and the events worker writing 945s into it, sees the same:
 *
 * - `received/<ISA13>.json` — an interchange accepted from the partner (a repeat is a duplicate);
 * - `sent/<ISA13>.json` — an interchange the service sent (997, 945, 944): its control number is
 *   taken by creating this file with the store's never-overwriting rename, so a number is never
 *   given twice, by any worker, also after a crash (a crash after the claim only skips a number);
 * - `acknowledged/<ISA13>.json` — the partner's 997 for it.
 *
 * Why the drop and not the history: the history is optional (`history.enabled`) and per
 * service, while the drop is what every worker of the pipeline already shares and writes.
 */
export const X12_FOLDER = `${WORK_FOLDER}/x12`;

export interface Party {
  readonly qualifier: string;
  readonly id: string;
}

export interface SentInterchange {
  readonly control: string;
  /** `997`, `945`, `944`. */
  readonly set: string;
  /** The file written, inside the drop. */
  readonly file: string;
  readonly sentAt: string;
  /** GS06 and the ST02s, for matching the partner's AK1/AK2. */
  readonly group: string;
}

export interface Acknowledgment {
  /** AK901: A, E, P, R. */
  readonly code: string;
  readonly file: string;
  readonly at: string;
}

const key = (party: Party) => `${party.qualifier}-${party.id}`.replace(/[^A-Za-z0-9._-]/g, '_');
const folder = (party: Party) => `${X12_FOLDER}/${key(party)}`;
const pad = (n: number) => String(n).padStart(9, '0');

async function readJson<T>(store: DropStore, name: string): Promise<T | undefined> {
  if (!(await store.stat(name))) return undefined;
  return JSON.parse(await text(await store.read(name))) as T;
}

/** The interchange accepted earlier from `sender` under `control`, if any. */
export function receivedBefore(
  store: DropStore,
  sender: Party,
  control: string,
): Promise<{ file: string; at: string } | undefined> {
  return readJson(store, `${folder(sender)}/received/${control}.json`);
}

export async function noteReceived(
  store: DropStore,
  sender: Party,
  control: string,
  fact: { file: string; at: string; sha256: string },
): Promise<void> {
  await store.write(`${folder(sender)}/received/${control}.json`, JSON.stringify(fact));
}

/**
 * Takes the next control number for an interchange to `partner`: the first free `sent/<n>` after
 * the hint in `next`, claimed by a rename that never overwrites. `describe` gives the record to
 * keep under it (its file name may depend on the number).
 */
export async function claimControlNumber(
  store: DropStore,
  partner: Party,
  describe: (control: string) => Omit<SentInterchange, 'control'>,
): Promise<SentInterchange> {
  const base = folder(partner);
  const hint = Number((await readJson<{ next: number }>(store, `${base}/next.json`))?.next ?? 1);
  const staging = `${base}/claim-${randomBytes(6).toString('hex')}.tmp`;
  for (let n = Math.max(1, hint); n < 1e9; n++) {
    const control = pad(n);
    const sent: SentInterchange = { control, ...describe(control) };
    await store.write(staging, JSON.stringify(sent));
    if (await store.rename(staging, `${base}/sent/${control}.json`)) {
      await store.write(`${base}/next.json`, JSON.stringify({ next: n + 1 }));
      return sent;
    }
  }
  await store.remove(staging);
  throw new Error(`No X12 control number left for ${key(partner)}`);
}

export async function noteAcknowledged(
  store: DropStore,
  partner: Party,
  control: string,
  ack: Acknowledgment,
): Promise<void> {
  await store.write(`${folder(partner)}/acknowledged/${control}.json`, JSON.stringify(ack));
}

/** Everything sent to `partner`, with its acknowledgment when there is one. */
export async function sentTo(
  store: DropStore,
  partner: Party,
): Promise<Array<SentInterchange & { acknowledged?: Acknowledgment }>> {
  const base = folder(partner);
  const acks = new Set((await store.list(`${base}/acknowledged`)).map((e) => e.name));
  const out: Array<SentInterchange & { acknowledged?: Acknowledgment }> = [];
  for (const entry of await store.list(`${base}/sent`)) {
    const sent = await readJson<SentInterchange>(store, entry.name);
    if (!sent) continue;
    const ackName = `${base}/acknowledged/${sent.control}.json`;
    const acknowledged = acks.has(ackName)
      ? await readJson<Acknowledgment>(store, ackName)
      : undefined;
    out.push({ ...sent, ...(acknowledged && { acknowledged }) });
  }
  return out.sort((a, b) => a.control.localeCompare(b.control));
}
