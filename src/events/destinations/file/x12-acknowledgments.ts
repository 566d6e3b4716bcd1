import { text } from 'node:stream/consumers';
import { readInterchange } from '../../../decode/x12/envelope.js';
import { noteAcknowledged, type SentInterchange, sentTo } from '../../../decode/x12/ledger.js';
import type { DropStore } from '../../../stores/store.js';
import type { X12OutboundSpec } from './format.js';

/**
 * The partner's side of what the service sends: its 997s, left in `events.x12.acknowledgments`,
 * read and matched to the interchanges sent (AK1's group control number is the GS06 the service
 * wrote, the same number as its ISA13), and what stays unacknowledged past `acknowledgeWithinMs`.
 */
export interface AcknowledgmentScan {
  /** 997 files read now that acknowledged an interchange sent. */
  readonly matched: number;
  /** Files in the folder that are no 997 from this partner, or acknowledge nothing sent: named, left alone. */
  readonly unmatched: readonly string[];
  /** Interchanges sent (945, 944) without a 997 after `acknowledgeWithinMs`, oldest first. */
  readonly unacknowledged: readonly SentInterchange[];
  /** Acknowledged, but rejected (AK9 `R`) or partly (`P`): the partner refused what was sent. */
  readonly refused: ReadonlyArray<SentInterchange & { readonly code: string }>;
}

export async function scanAcknowledgments(
  store: DropStore,
  spec: X12OutboundSpec,
  now = Date.now(),
): Promise<AcknowledgmentScan> {
  let matched = 0;
  const unmatched: string[] = [];
  const sent = await sentTo(store, spec.receiver);
  const byGroup = new Map(sent.map((s) => [s.group, s]));
  const folder = spec.acknowledgments;
  for (const entry of folder ? await store.list(folder) : []) {
    const { interchange } = readInterchange(await text(await store.read(entry.name)));
    const fromPartner =
      interchange?.sender.id === spec.receiver.id &&
      interchange.sender.qualifier === spec.receiver.qualifier;
    let acknowledged = false;
    for (const group of fromPartner ? interchange.groups : []) {
      if (group.functionalId !== 'FA') continue;
      for (const set of group.sets) {
        const ak1 = set.segments.find((s) => s.id === 'AK1');
        const ak9 = set.segments.find((s) => s.id === 'AK9');
        const ours = ak1 && byGroup.get(String(Number(ak1.elements[2])));
        if (!ours || !ak9 || ours.acknowledged) continue;
        const at = new Date(now).toISOString();
        const ack = { code: ak9.elements[1] ?? '', file: entry.name, at };
        await noteAcknowledged(store, spec.receiver, ours.control, ack);
        byGroup.set(ours.group, { ...ours, acknowledged: ack });
        acknowledged = true;
        matched += 1;
      }
    }
    if (!acknowledged && !sent.some((s) => s.acknowledged?.file === entry.name))
      unmatched.push(entry.name);
  }
  const current = [...byGroup.values()].filter((s) => s.set !== '997');
  return {
    matched,
    unmatched,
    unacknowledged: current.filter(
      (s) => !s.acknowledged && now - Date.parse(s.sentAt) >= spec.acknowledgeWithinMs,
    ),
    refused: current.flatMap((s) =>
      s.acknowledged && s.acknowledged.code !== 'A' && s.acknowledged.code !== 'E'
        ? [{ ...s, code: s.acknowledged.code }]
        : [],
    ),
  };
}
