import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { asLocalResourceError, LocalResourcesExhausted } from '../errors.js';

/** One record of a streamed batch, ready to publish: what the validation pass made of it. */
export interface SpooledMessage {
  /** SHA-256 of the record's identity (`MessageIds.digest`), before occurrence numbering. */
  readonly digest: Buffer;
  /** The record's routing key. */
  readonly routingKey: string;
  /** The record's own number, for lineage (`''` when the batch keeps no lineage). */
  readonly reference: string;
  /** The record's first input line, where the decoder knows it. */
  readonly line: number | undefined;
  /** The message body: the validated record's JSON. */
  readonly body: Buffer;
}

/** Spool blocks are this large (a record larger than this gets a block of its own). */
const BLOCK_BYTES = 1 << 20;
/** Written blocks kept to be filled again (`MessageSpool.free`). */
const FREE_BLOCKS = 2;
/** A spool with a file keeps this much in memory before it moves to the file. */
export const IN_MEMORY_BYTES = 8 << 20;
const DIGEST_BYTES = 32;
/** Frame head: digest, then line + 1 (0: none), routing key, reference and body lengths (32 bits each). */
const HEAD_BYTES = DIGEST_BYTES + 16;
/** A routing key length meaning "the same key as the record before". */
const SAME_KEY = 0xffffffff;

/**
 * Where the validation pass of a streamed batch keeps each valid record as its ready message, so
 * that the publish pass only reads and publishes: it does not parse, convert, validate and
 * serialise every record a second time (that second pass was half of a big drop's worker CPU, on
 * the core the broker needs). Written once, in order, then read once from the start.
 *
 * Blocks of whole frames, in memory up to `inMemoryUpTo` bytes and then in a file (`file`), since
 * records take far more room than the CSV they come from (~10× for two-line sales orders): a
 * 10 MiB CSV body would otherwise hold ~100 MiB, and a drop's file can hold millions of records.
 * The file is made only when needed, readable by its owner only (records are business data), and
 * removed by `remove()`; after a crash its folder is the caller's to clean up (`SPOOL_OWNER` names).
 */
export class MessageSpool implements SpooledMessages {
  private block: Buffer = Buffer.allocUnsafe(BLOCK_BYTES);
  private used = 0;
  private previousKey: string | undefined;
  private readonly blocks: Buffer[] = [];
  /**
   * Blocks already written to the file, filled again rather than left to the garbage collector
   * (a file of records would otherwise drop a 1 MiB buffer per block, which piles up between
   * collections: the external memory of a validation pass). A few suffice: few writes are in flight.
   */
  private readonly free: Buffer[] = [];
  private handle: FileHandle | undefined;
  /** Bytes of the blocks kept in memory. */
  private inMemory = 0;
  /** The spool is moving to its file (the blocks in memory are being written). */
  private moving = false;
  /** The file, once opened (`handle` is set only once the blocks kept in memory are in it). */
  private opened: FileHandle | undefined;
  /** Bytes of the file taken by blocks handed over (written, or being written). */
  private written = 0;
  /** The writes in order: each block goes after the one before. */
  private writing: Promise<void> = Promise.resolve();
  private count = 0;

  /**
   * @param file where the spool moves once it holds more than `inMemoryUpTo` bytes (created then,
   * with its folder; it must not exist). @default in memory only, however large
   */
  constructor(
    private readonly file?: string,
    private readonly inMemoryUpTo = IN_MEMORY_BYTES,
  ) {}

  /** Records appended so far. */
  get size(): number {
    return this.count;
  }

  /**
   * Appends one record. Returns a promise only when a full block went to the file: the caller
   * awaits it (back-pressure), and most appends cost no turn of the event loop.
   */
  append(
    digest: Buffer,
    routingKey: string,
    reference: string,
    line: number | undefined,
    body: string,
  ): Promise<void> | undefined {
    const sameKey = routingKey === this.previousKey;
    this.previousKey = routingKey;
    const key = sameKey ? '' : routingKey;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: room for that is room enough, without measuring first.
    const room = HEAD_BYTES + 3 * (key.length + reference.length + body.length);
    let flushed: Promise<void> | undefined;
    if (this.used + room > this.block.length) {
      flushed = this.flush(room);
    }
    const block = this.block;
    let at = this.used;
    digest.copy(block, at, 0, DIGEST_BYTES);
    at += DIGEST_BYTES;
    block.writeUInt32LE(line === undefined ? 0 : line + 1, at);
    const lengths = at + 4;
    at = lengths + 12;
    const keyBytes = block.write(key, at);
    at += keyBytes;
    const referenceBytes = block.write(reference, at);
    at += referenceBytes;
    const bodyBytes = block.write(body, at);
    at += bodyBytes;
    block.writeUInt32LE(sameKey ? SAME_KEY : keyBytes, lengths);
    block.writeUInt32LE(referenceBytes, lengths + 4);
    block.writeUInt32LE(bodyBytes, lengths + 8);
    this.used = at;
    this.count += 1;
    return flushed;
  }

  /** Everything appended is in the spool (the last block written, for a file). */
  async finish(): Promise<void> {
    await this.flush(0);
  }

  /** The records, in the order they were appended. Call after `finish()`. */
  read(): AsyncGenerator<SpooledMessage> {
    return framesOf(this.readBlocks());
  }

  /**
   * For a spool whose records all went to its file (`inMemoryUpTo` 0), once `finish()`ed: closes
   * the file and keeps it, for another thread to read (`SpoolFile`).
   */
  async keepFile(): Promise<{ readonly written: number; readonly count: number }> {
    await this.writing;
    if (this.blocks.length > 0) throw new Error('the message spool still holds records in memory');
    const handle = this.opened;
    this.handle = this.opened = undefined;
    await handle?.close();
    return { written: this.written, count: this.count };
  }

  /** Closes and deletes the file (if any); the spool is empty afterwards. */
  async remove(): Promise<void> {
    await this.writing.catch(() => undefined);
    this.blocks.length = 0;
    const handle = this.opened;
    this.handle = this.opened = undefined;
    await handle?.close().catch(() => undefined);
    if (handle && this.file !== undefined) await rm(this.file, { force: true });
  }

  /** Hands the current block over (to memory or the file) and starts one with room for `room` bytes. */
  private flush(room: number): Promise<void> {
    const full = this.block.subarray(0, this.used);
    this.block =
      (room <= BLOCK_BYTES && this.free.pop()) || Buffer.allocUnsafe(Math.max(BLOCK_BYTES, room));
    this.used = 0;
    if (full.length === 0) return this.writing;
    if (this.handle) return this.writeBlock(full);
    this.blocks.push(full);
    this.inMemory += full.length;
    if (this.file !== undefined && !this.moving && this.inMemory > this.inMemoryUpTo) {
      this.moving = true;
      const file = this.file;
      this.writing = this.writing.then(() => this.moveToFile(file));
    }
    return this.writing;
  }

  /** Opens the file and writes the blocks kept in memory to it; the blocks after them go there too. */
  private async moveToFile(file: string): Promise<void> {
    const handle = await mkdir(path.dirname(file), { recursive: true })
      .then(() => open(file, 'wx+', 0o600))
      .catch((error: unknown) => {
        throw asLocalResourceError(error);
      });
    this.opened = handle;
    // Blocks handed over while this runs join the memory list: written here too, in order.
    while (this.blocks.length > 0) {
      for (const block of this.blocks.splice(0)) await this.put(handle, block, this.reserve(block));
    }
    this.inMemory = 0;
    this.handle = handle;
  }

  /** Where the next block goes in the file, taken at once so that writes in flight never overlap. */
  private reserve(block: Buffer): number {
    const position = this.written;
    this.written += 4 + block.length;
    return position;
  }

  /** Queues one block for the file, after those before it. */
  private writeBlock(block: Buffer): Promise<void> {
    const handle = this.handle!;
    const position = this.reserve(block);
    this.writing = this.writing.then(() => this.put(handle, block, position));
    return this.writing;
  }

  private async put(handle: FileHandle, block: Buffer, position: number): Promise<void> {
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32LE(block.length);
    const { bytesWritten } = await handle
      .writev([head, block], position)
      .catch((error: unknown) => {
        throw asLocalResourceError(error);
      });
    // A regular file takes a whole write unless the disk is full.
    if (bytesWritten !== 4 + block.length) throw new LocalResourcesExhausted('ENOSPC');
    // Written: nothing refers to the block now. One of the standard size is filled again.
    if (block.buffer.byteLength === BLOCK_BYTES && this.free.length < FREE_BLOCKS)
      this.free.push(Buffer.from(block.buffer, 0, BLOCK_BYTES));
  }

  private async *readBlocks(): AsyncGenerator<Buffer> {
    if (!this.handle) yield* this.blocks;
    else yield* fileBlocks(this.handle, this.written);
  }
}

/** What the publish pass reads: a streamed batch's ready messages, in order. */
export interface SpooledMessages {
  /** Records in the spool. */
  readonly size: number;
  read(): AsyncIterable<SpooledMessage>;
  /** Removes what the spool holds (its file, if any). */
  remove(): Promise<void>;
}

/**
 * A spool file another thread wrote (`MessageSpool.keepFile`), read once from the start here,
 * and removed with `remove()`.
 */
export class SpoolFile implements SpooledMessages {
  constructor(
    private readonly file: string,
    private readonly written: number,
    readonly size: number,
  ) {}

  async *read(): AsyncGenerator<SpooledMessage> {
    if (this.written === 0) return;
    const handle = await open(this.file, 'r');
    try {
      yield* framesOf(fileBlocks(handle, this.written));
    } finally {
      await handle.close();
    }
  }

  async remove(): Promise<void> {
    await rm(this.file, { force: true });
  }
}

/** Several spools read one after the other, as one (a batch validated in parts). */
export function spoolsInOrder(spools: readonly SpooledMessages[]): SpooledMessages {
  return {
    size: spools.reduce((sum, spool) => sum + spool.size, 0),
    async *read() {
      for (const spool of spools) yield* spool.read();
    },
    async remove() {
      await Promise.all(spools.map((spool) => spool.remove()));
    },
  };
}

/** The frames of a spool's blocks, as records. */
async function* framesOf(
  blocks: AsyncIterable<Buffer> | Iterable<Buffer>,
): AsyncGenerator<SpooledMessage> {
  let previousKey = '';
  for await (const block of blocks) {
    let at = 0;
    while (at < block.length) {
      const digest = block.subarray(at, at + DIGEST_BYTES);
      at += DIGEST_BYTES;
      const lineField = block.readUInt32LE(at);
      const keyLength = block.readUInt32LE(at + 4);
      const referenceLength = block.readUInt32LE(at + 8);
      const bodyLength = block.readUInt32LE(at + 12);
      at += 16;
      let routingKey = previousKey;
      if (keyLength !== SAME_KEY) {
        routingKey = block.toString('utf8', at, at + keyLength);
        at += keyLength;
        previousKey = routingKey;
      }
      const reference =
        referenceLength === 0 ? '' : block.toString('utf8', at, at + referenceLength);
      at += referenceLength;
      const body = block.subarray(at, at + bodyLength);
      at += bodyLength;
      yield {
        digest,
        routingKey,
        reference,
        line: lineField === 0 ? undefined : lineField - 1,
        body,
      };
    }
  }
}

/** The blocks of a spool file: each a 32-bit length, then the block. */
async function* fileBlocks(handle: FileHandle, written: number): AsyncGenerator<Buffer> {
  const head = Buffer.allocUnsafe(4);
  let position = 0;
  while (position < written) {
    await readFully(handle, head, position);
    const length = head.readUInt32LE(0);
    // A fresh buffer per block: the bodies yielded are views of it, held until they are confirmed.
    const block = Buffer.allocUnsafe(length);
    await readFully(handle, block, position + 4);
    position += 4 + length;
    yield block;
  }
}

async function readFully(handle: FileHandle, into: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) throw new Error('the message spool ended early');
    done += bytesRead;
  }
}
