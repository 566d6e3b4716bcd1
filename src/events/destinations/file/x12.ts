import { ADVICE } from '../../../decode/x12/advice.js';
import { claimControlNumber } from '../../../decode/x12/ledger.js';
import { writeInterchange } from '../../../decode/x12/write.js';
import type { DropStore } from '../../../stores/store.js';
import type { WriteOutcome } from '../../../vocabulary.js';
import type { WarehouseEvent } from '../../event.js';
import { writeOutboundFile, type X12OutboundSpec } from './format.js';

/** Event types an X12 outbound folder writes (945, 944); others are not its to write. */
export const x12EventTypes = (): readonly string[] => Object.keys(ADVICE);

/**
 * Writes one event as its own interchange (945 or 944). The name depends on the event only, so
 * a name already there is delivered before any control number is taken; otherwise the next
 * control number of the partner's ledger is claimed (never reused: src/decode/x12/ledger.ts) and
 * the interchange written under it. A crash between the two skips a number, never repeats one.
 */
export async function writeX12Event(
  store: DropStore,
  name: string,
  event: WarehouseEvent,
  spec: X12OutboundSpec,
): Promise<WriteOutcome> {
  const advice = ADVICE[event.type];
  if (!advice) throw new Error(`No X12 transaction set for ${event.type}`);
  if (await store.stat(name)) return 'existing';
  const at = new Date();
  const sent = await claimControlNumber(store, spec.receiver, (control) => ({
    set: advice.set,
    file: name,
    sentAt: at.toISOString(),
    group: String(Number(control)),
  }));
  const content = writeInterchange(
    {
      sender: spec.sender,
      receiver: spec.receiver,
      version: spec.version,
      usage: spec.usage,
      control: sent.control,
      functionalId: advice.functionalId,
      at,
    },
    [advice.build(event)],
  );
  return writeOutboundFile(store, name, content);
}
