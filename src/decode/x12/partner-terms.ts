import type { Segment } from './envelope.js';

/**
 * Errors in an X12 partner's terms: the transaction set control number, the segment position
 * and id, the element position — what a 997's AK2/AK3/AK4 (IK3/IK4) carry. One format, written
 * here and read back here (`parseLocated`) when the 997 is made from a receipt.
 */
export interface Place {
  /** ST02 of the transaction set. */
  readonly set: string;
  readonly segment?: { readonly id: string; readonly position: number };
  /** Element position in the segment (1 for `W0101`). */
  readonly element?: number;
  /** The segment is missing (AK3 code 3), rather than wrong. */
  readonly missing?: boolean;
}

export function located(place: Place, message: string): string {
  const segment = place.segment
    ? `, segment ${place.segment.position} (${place.segment.id})${place.element === undefined ? '' : `, element ${String(place.element).padStart(2, '0')}`}`
    : '';
  return `transaction set ${place.set}${segment}: ${message}`;
}

const LOCATED =
  /^transaction set ([^,:]+)(?:, segment (\d+) \(([A-Z0-9]{2,3})\)(?:, element (\d+))?)?: (.*)$/s;

/** A located error read back: its place and message; undefined for another text. */
export function parseLocated(text: string): (Place & { message: string }) | undefined {
  const match = LOCATED.exec(text);
  if (!match) return undefined;
  const [, set, position, id, element, message] = match;
  return {
    set: set!,
    ...(position && id && { segment: { id, position: Number(position) } }),
    ...(element && { element: Number(element) }),
    ...(/\bmissing\b/.test(message!) && element === undefined && { missing: true }),
    message: message!,
  };
}

/** Where a v2 value came from: a segment, and the element in it when one element holds it. */
export interface Source {
  readonly segment: Segment;
  readonly element?: number;
}

/** A segment an absent v2 part would come from: named when the part is missing. */
export interface Carrier {
  /** A v2 path prefix, e.g. `shipAddresses` or `dates.dueOut`. */
  readonly path: string;
  readonly segment: string;
  /** What the segment must say, e.g. `N1*ST`, for the message. */
  readonly shown: string;
}

/**
 * One record's way back to the transaction set: every v2 path the mapping filled, with its
 * segment and element. A v2 error names the path exactly, or a path inside a filled object
 * (`shipmentLines[1].product.unitOfMeasure` under the W01 that made `shipmentLines[1]`).
 */
export class SourceMap {
  private readonly sources = new Map<string, Source>();
  constructor(
    readonly set: string,
    private readonly carriers: readonly Carrier[],
  ) {}

  add(path: string, source: Source): void {
    this.sources.set(path, source);
  }

  /** The place of a v2 path, or undefined when nothing in the set made it (the profile did, or should). */
  place(path: string): Place | undefined {
    for (let at = path; at !== ''; at = parent(at)) {
      const source = this.sources.get(at);
      if (!source) continue;
      const segment = { id: source.segment.id, position: source.segment.position };
      return at === path && source.element !== undefined
        ? { set: this.set, segment, element: source.element }
        : { set: this.set, segment };
    }
    return undefined;
  }

  /** The segment that would carry a path nothing made, if the layout has one. */
  carrier(path: string): Carrier | undefined {
    const bare = path.replace(/\[\d+\]/g, '[]');
    // The path itself, a path inside it, or a missing parent of it (`dates` for `dates.dueOut`).
    return this.carriers.find(
      (c) =>
        bare === c.path ||
        bare.startsWith(`${c.path}.`) ||
        bare.startsWith(`${c.path}[`) ||
        c.path.startsWith(`${bare}.`),
    );
  }
}

/** `a.b[2].c` → `a.b[2]` → `a.b` → `a` → ``. */
function parent(path: string): string {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}
