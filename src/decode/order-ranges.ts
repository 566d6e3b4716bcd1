import { hash } from 'node:crypto';

/**
 * First and last row line of each order already finished, up to a limit. An open-addressing table
 * in one typed array, five 32-bit words a slot: 96 bits of the key's SHA-1, then its first and last
 * line (`first` is at least 1, so 0 marks a free slot). About 30 bytes a key, none of it on the JS
 * heap: a map of strings cost ~90 heap bytes a key, and V8 sized the whole heap from that live set
 * (a 500k-order file peaked ~90 MiB higher). Two different keys share 96 bits with a chance of
 * about 1 in 10^16 for a million orders; exact enough for a check whose error names both places.
 */
export class OrderRanges {
  private slots: Uint32Array = new Uint32Array(SLOT_WORDS * 1024);
  private mask = 1023;
  private count = 0;

  constructor(private readonly limit: number) {}

  /** A table made elsewhere (another thread's `words`), to look keys up in; it remembers no more. */
  static reading(words: Uint32Array): OrderRanges {
    const table = new OrderRanges(0);
    table.slots = words;
    table.mask = words.length / SLOT_WORDS - 1;
    return table;
  }

  get(key: string): [number, number] | undefined {
    const print = fingerprint(key);
    const at = this.find(print.readUInt32LE(0), print.readUInt32LE(4), print.readUInt32LE(8));
    return at < 0 ? undefined : [this.slots[at + 3]!, this.slots[at + 4]!];
  }

  /** Keeps the first appearance; a reappearing order was already reported against it. */
  remember(key: string, first: number, last: number): void {
    if (this.count >= this.limit) return;
    const print = fingerprint(key);
    const [f0, f1, f2] = [print.readUInt32LE(0), print.readUInt32LE(4), print.readUInt32LE(8)];
    if (this.find(f0, f1, f2) >= 0) return;
    // At most three quarters full, so a probe ends soon.
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.grow();
    this.put(f0, f1, f2, first, last);
    this.count += 1;
  }

  /** The table's words, to hand to another thread, whose table then reads them with `sharesKeyWith`. */
  get words(): Uint32Array {
    return this.slots;
  }

  /** Whether this table holds a key of another table (given its `words`). */
  sharesKeyWith(words: Uint32Array): boolean {
    for (let at = 0; at + SLOT_WORDS <= words.length; at += SLOT_WORDS) {
      if (words[at + 3] !== 0 && this.find(words[at]!, words[at + 1]!, words[at + 2]!) >= 0)
        return true;
    }
    return false;
  }

  /** The word offset of the key's slot, or -1. */
  private find(f0: number, f1: number, f2: number): number {
    const { slots, mask } = this;
    for (let slot = f0 & mask; ; slot = (slot + 1) & mask) {
      const at = slot * SLOT_WORDS;
      if (slots[at + 3] === 0) return -1;
      if (slots[at] === f0 && slots[at + 1] === f1 && slots[at + 2] === f2) return at;
    }
  }

  private put(f0: number, f1: number, f2: number, first: number, last: number): void {
    const { slots, mask } = this;
    let slot = f0 & mask;
    while (slots[slot * SLOT_WORDS + 3] !== 0) slot = (slot + 1) & mask;
    const at = slot * SLOT_WORDS;
    slots[at] = f0;
    slots[at + 1] = f1;
    slots[at + 2] = f2;
    slots[at + 3] = first; // a data row's line: 2 or more
    slots[at + 4] = last;
  }

  private grow(): void {
    const old = this.slots;
    this.mask = this.mask * 2 + 1;
    this.slots = new Uint32Array(SLOT_WORDS * (this.mask + 1));
    for (let at = 0; at < old.length; at += SLOT_WORDS) {
      if (old[at + 3] !== 0)
        this.put(old[at]!, old[at + 1]!, old[at + 2]!, old[at + 3]!, old[at + 4]!);
    }
  }
}

const SLOT_WORDS = 5;

/** The key's SHA-1; its first 96 bits are the fingerprint. */
const fingerprint = (key: string): Buffer => hash('sha1', key, 'buffer');
