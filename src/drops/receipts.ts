import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Environment } from '../config/schema.js';
import { readFile } from 'node:fs/promises';
import type { ProblemDetails, RecordErrors } from '../errors.js';
import { acknowledgmentSets, KNOWN_SEGMENTS } from '../decode/x12/acknowledge.js';
import { readInterchange } from '../decode/x12/envelope.js';
import { claimControlNumber, noteReceived } from '../decode/x12/ledger.js';
import { writeInterchange } from '../decode/x12/write.js';
import type { DropStore } from '../stores/store.js';
import type { BulkResponse } from '../ingest/batch.js';
import type { ReceiptOutcome } from '../vocabulary.js';

/**
 * What a dropped file gets back, written next to its final place as `<name>.receipt.json`:
 * exactly what the HTTP API would have answered (the bulk response, or the problem details
 * with every error — for CSV with line and column), plus the facts of the file.
 */
export interface Receipt {
  /**
   * `accepted`: every record published and confirmed. `validated`: the sandbox's answer — every
   * record passed validation and, as the sandbox creates nothing, nothing was published.
   * `rejected`: nothing published. `duplicate`: these bytes were accepted before. `dead`: given up
   * on after too many tries; nothing more is published, and what earlier tries got confirmed is
   * in its problem (`publishedRecords`, `messageIds`).
   */
  outcome: ReceiptOutcome;
  /** The environment that wrote the receipt: a sandbox receipt never reads like a production one. */
  environment: Environment;
  /** The `202` bulk response (accepted, duplicate) or the problem details (rejected, dead). */
  response: BulkResponse | ProblemDetails;
  pipeline: string;
  businessId: string;
  kind: string;
  format: string;
  file: { name: string; size: number; sha256: string; source: string };
  /** When the worker took the file, and when the outcome was known (ISO 8601, UTC). */
  receivedAt: string;
  processedAt: string;
  /** 1 for the first try; more after retries and reprocessing. */
  attempt: number;
  /** For a duplicate: the receipt of the accepted copy. */
  duplicateOf?: { file: string; processedAt: string; receipt: string };
}

export const RECEIPT_SUFFIX = '.receipt.json';

export function receiptName(inputName: string): string {
  return `${inputName}${RECEIPT_SUFFIX}`;
}

export function serializeReceipt(receipt: Receipt): string {
  return `${JSON.stringify(receipt, null, 2)}\n`;
}

/**
 * The message ids of one accepted file live in a local file (one per line) while it is worked on,
 * and in the drop's state next to it afterwards: a file of a million records has a million ids,
 * and neither they nor the receipt that lists them are ever held in memory whole.
 */
export interface IdFile {
  readonly path: string;
  append(ids: readonly string[]): Promise<void>;
  /** Flushes and closes; the file is complete when this resolves. */
  end(): Promise<void>;
  /** Closes without waiting, the file left as it is (a try that failed): no open file is leaked. */
  abandon(): void;
}

/** `append`: add to the ids already in `path` (a try resuming an interrupted one). */
export function openIdFile(path: string, { append = false } = {}): IdFile {
  const out = createWriteStream(path, { flags: append ? 'a' : 'w' });
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  failed.catch(() => undefined);
  return {
    path,
    async append(ids) {
      if (ids.length === 0) return;
      if (!out.write(`${ids.join('\n')}\n`)) await Promise.race([once(out, 'drain'), failed]);
    },
    async end() {
      out.end();
      await Promise.race([once(out, 'finish'), failed]);
    },
    abandon() {
      if (!out.writableFinished) out.destroy();
    },
  };
}

/** Stands in for the id list while the rest of the receipt is serialised. */
const MARKER = '\u0000message-ids\u0000';

/**
 * Writes `receipt` to `path` as `serializeReceipt` would, with `response.messageIds` streamed
 * from `idsPath` (when given) instead of taken from the object.
 */
export async function writeReceiptFile(
  path: string,
  receipt: Receipt,
  idsPath?: string,
): Promise<void> {
  const out = createWriteStream(path);
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  failed.catch(() => undefined);
  const write = async (text: string) => {
    if (!out.write(text)) await Promise.race([once(out, 'drain'), failed]);
  };
  if (!idsPath) {
    await write(serializeReceipt(receipt));
  } else {
    const text = serializeReceipt({
      ...receipt,
      response: { ...receipt.response, messageIds: [MARKER] },
    } as Receipt);
    const marker = text.indexOf(JSON.stringify(MARKER));
    const lineStart = text.lastIndexOf('\n', marker) + 1;
    const indent = text.slice(lineStart, marker);
    await write(text.slice(0, lineStart));
    let first = true;
    for await (const id of createInterface({
      input: createReadStream(idsPath),
      crlfDelay: Infinity,
    })) {
      if (id === '') continue;
      await write(`${first ? '' : ',\n'}${indent}"${id}"`);
      first = false;
    }
    await write(text.slice(marker + JSON.stringify(MARKER).length));
  }
  out.end();
  await Promise.race([once(out, 'finish'), failed]);
}

/** What an X12 input gets beside its receipt: `<input name>.997`. */
export const ACKNOWLEDGMENT_SUFFIX = '.997';

/**
 * The 997 of an X12 input, written beside its receipt (`written`) once its outcome is known:
 * the receipt in the partner's own terms (src/decode/x12/acknowledge.ts), under a control number
 * of the partner's ledger, never reused. An accepted interchange is noted as received, so that
 * the same sender's control number coming again is refused as a duplicate. A file without a
 * readable ISA gets no 997 (nothing says whom to answer): its receipt says why.
 */
export async function writeAcknowledgment(
  store: DropStore,
  input: { path: string; sha256: string },
  receipt: Pick<Receipt, 'outcome' | 'response' | 'file' | 'processedAt'>,
  written: string,
): Promise<string | undefined> {
  const { interchange, findings } = readInterchange(
    (await readFile(input.path)).toString('latin1'),
  );
  if (!interchange) return undefined;
  const accepted = ['accepted', 'validated', 'duplicate'].includes(receipt.outcome);
  const errors = ((receipt.response as ProblemDetails).errors ?? []).filter(
    (e): e is RecordErrors => 'index' in e,
  );
  const first = interchange.groups[0];
  const name = `${written.slice(0, -RECEIPT_SUFFIX.length)}${ACKNOWLEDGMENT_SUFFIX}`;
  const at = new Date();
  const sent = await claimControlNumber(store, interchange.sender, (control) => ({
    set: '997',
    file: name,
    sentAt: at.toISOString(),
    group: String(Number(control)),
  }));
  const text = writeInterchange(
    {
      sender: { ...interchange.receiver, ...(first && { groupId: first.receiverGroupId }) },
      receiver: { ...interchange.sender, ...(first && { groupId: first.senderGroupId }) },
      version: first?.version ?? (interchange.version === '00501' ? '005010' : '004010'),
      usage: interchange.usage,
      control: sent.control,
      functionalId: 'FA',
      separators: interchange.separators,
      at,
    },
    acknowledgmentSets({ interchange, findings, accepted, errors, known: KNOWN_SEGMENTS }),
  );
  await store.write(name, text);
  if (receipt.outcome === 'accepted')
    await noteReceived(store, interchange.sender, interchange.control, {
      file: receipt.file.name,
      at: receipt.processedAt,
      sha256: input.sha256,
    });
  return name;
}
