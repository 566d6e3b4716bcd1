/**
 * Finds which records of a streamed batch may occur more than once, without keeping every record's
 * digest: a scalable Bloom filter (Almeida et al., 2007) sees each digest once in the validation
 * pass and remembers exactly those it may have seen before — every true repeat, plus about 1% of
 * the others. The publish pass then counts occurrences only for those, so a file's memory grows
 * by about 1.5 bytes per record instead of the ~150 of a map of every digest.
 */
export class RepeatFilter implements Repeats {
  private readonly layers: BloomLayer[] = [new BloomLayer(FIRST_CAPACITY)];
  private readonly maybeRepeated = new Set<string>();

  /** A filter filled in another thread, from what its `exported()` gave. */
  static imported(state: ExportedRepeats): RepeatFilter {
    const filter = new RepeatFilter();
    filter.layers.splice(0, 1, ...state.layers.map((layer) => BloomLayer.imported(layer)));
    for (const hex of state.maybeRepeated) filter.maybeRepeated.add(hex);
    return filter;
  }

  /** The filter as plain data, to hand to another thread (its bit arrays can be transferred). */
  exported(): ExportedRepeats {
    return {
      layers: this.layers.map((layer) => layer.exported()),
      maybeRepeated: [...this.maybeRepeated],
    };
  }

  /**
   * The repeats of a batch read in two parts, each seen by a filter of its own: a digest may repeat
   * if either part may repeat it, or if both parts may hold it.
   */
  static union(first: RepeatFilter, second: RepeatFilter): Repeats {
    return {
      mayRepeat: (hex) => {
        if (first.mayRepeat(hex) || second.mayRepeat(hex)) return true;
        const digest = Buffer.from(hex, 'hex');
        return first.has(digest) && second.has(digest);
      },
    };
  }

  /** Whether the digest may have been added (false: it certainly was not). */
  has(digest: Buffer): boolean {
    return this.layers.some((layer) => layer.has(digest));
  }

  /** Takes a record's digest (32 bytes of SHA-256) in input order. */
  add(digest: Buffer): void {
    // Its hex only for the few kept: most records are seen once, and a string each would be garbage.
    if (this.has(digest)) this.maybeRepeated.add(digest.toString('hex'));
    let newest = this.layers[this.layers.length - 1]!;
    if (newest.full) this.layers.push((newest = new BloomLayer(newest.capacity * 2)));
    newest.add(digest);
  }

  /** False only for a digest that occurs once in the batch; true for every repeat (and a few others). */
  mayRepeat(hex: string): boolean {
    return this.maybeRepeated.has(hex);
  }
}

/** Which records of a streamed batch may occur more than once (see `RepeatFilter`). */
export interface Repeats {
  /** False only for a digest (hex) that occurs once in the batch; true for every repeat (and a few others). */
  mayRepeat(hex: string): boolean;
}

/** A `RepeatFilter` as plain data (`exported()`). */
export interface ExportedRepeats {
  readonly layers: ReadonlyArray<{
    readonly capacity: number;
    readonly count: number;
    readonly bits: Uint32Array;
  }>;
  readonly maybeRepeated: readonly string[];
}

const FIRST_CAPACITY = 1 << 14;
/** 10 bits and 7 probes per element: about 0.8% false positives per layer. */
const BITS_PER_ELEMENT = 10;
const PROBES = 7;

class BloomLayer {
  private readonly bits: Uint32Array;
  private readonly size: number;
  private count = 0;

  constructor(
    readonly capacity: number,
    bits?: Uint32Array,
  ) {
    this.size = capacity * BITS_PER_ELEMENT;
    this.bits = bits ?? new Uint32Array(Math.ceil(this.size / 32));
  }

  static imported(state: ExportedRepeats['layers'][number]): BloomLayer {
    const layer = new BloomLayer(state.capacity, state.bits);
    layer.count = state.count;
    return layer;
  }

  exported(): ExportedRepeats['layers'][number] {
    return { capacity: this.capacity, count: this.count, bits: this.bits };
  }

  get full(): boolean {
    return this.count >= this.capacity;
  }

  has(digest: Buffer): boolean {
    for (let probe = 0; probe < PROBES; probe++) {
      const bit = this.position(digest, probe);
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  add(digest: Buffer): void {
    for (let probe = 0; probe < PROBES; probe++) {
      const bit = this.position(digest, probe);
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count += 1;
  }

  /** Double hashing (Kirsch–Mitzenmacher) over two independent 32-bit words of the digest. */
  private position(digest: Buffer, probe: number): number {
    // `>>> 0`: `| 1` alone would make the step a signed 32-bit number, and some positions negative.
    return (digest.readUInt32LE(0) + probe * ((digest.readUInt32LE(4) | 1) >>> 0)) % this.size;
  }
}
