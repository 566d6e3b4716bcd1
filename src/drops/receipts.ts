import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { serializeReceipt, type Receipt } from '../pipeline/receipt.js';

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
