/**
 * Reads an ASC X12 interchange (004010 or 005010): the separators from its own ISA, then the
 * ISA/GS/ST/SE/GE/IEA envelope with its counts and control numbers checked. Nothing here knows
 * a transaction set's content (940, 943…): that is `sales-orders.ts` and `purchase-orders.ts`.
 * Why our own code rather than node-x12: docs/decisions.md#asc-x12-our-own-envelope-reader-node-x12-only-in-tests.
 */

/** One segment: `elements[1]` is its first element (`W0501`), `elements[0]` its id, as X12 numbers them. */
export interface Segment {
  readonly id: string;
  readonly elements: readonly string[];
  /** Position in its transaction set (ST is 1), or in the interchange for envelope segments. */
  readonly position: number;
}

export interface Separators {
  readonly element: string;
  readonly component: string;
  readonly segment: string;
}

export interface TransactionSet {
  /** ST01: `940`, `943`… */
  readonly id: string;
  /** ST02, as sent. */
  readonly control: string;
  /** Segments between ST and SE, positioned from ST (1). */
  readonly segments: readonly Segment[];
}

export interface FunctionalGroup {
  /** GS01: `OW` (940), `AR` (943)… */
  readonly functionalId: string;
  /** GS06, as sent. */
  readonly control: string;
  /** GS08: `004010`, `005010`… */
  readonly version: string;
  /** GS02 and GS03: the application codes of sender and receiver. */
  readonly senderGroupId: string;
  readonly receiverGroupId: string;
  readonly sets: readonly TransactionSet[];
}

export interface Interchange {
  readonly separators: Separators;
  /** ISA05/ISA06 and ISA07/ISA08 (trimmed): who sent it, to whom. */
  readonly sender: { readonly qualifier: string; readonly id: string };
  readonly receiver: { readonly qualifier: string; readonly id: string };
  /** ISA12: `00401` or `00501`. */
  readonly version: string;
  /** ISA13, as sent (nine digits). */
  readonly control: string;
  /** ISA15: `P` production, `T` test. */
  readonly usage: string;
  readonly groups: readonly FunctionalGroup[];
}

/**
 * What is wrong with the envelope, in the terms a 997 answers with: a transaction set's AK5 code
 * (1 not supported, 2 trailer missing, 3 control numbers differ, 4 segment count differs), a
 * group's AK9 code (2 version not supported, 3 trailer missing, 4 control numbers differ,
 * 5 set count differs), or the interchange itself (no code: 997s acknowledge groups).
 */
export type EnvelopeFinding =
  | { readonly scope: 'interchange'; readonly message: string }
  | {
      readonly scope: 'group';
      readonly group: number;
      readonly code: number;
      readonly message: string;
    }
  | {
      readonly scope: 'set';
      readonly group: number;
      readonly set: number;
      readonly code: number;
      readonly message: string;
    };

export interface ReadInterchange {
  /** Undefined when there is no readable ISA (no separators, nothing to acknowledge). */
  readonly interchange: Interchange | undefined;
  readonly findings: readonly EnvelopeFinding[];
}

const ISA_LENGTH = 106;
const VERSIONS = new Set(['00401', '00501']);
const GROUP_VERSIONS = /^00[45]010/;
const SEGMENT_ID = /^[A-Z][A-Z0-9]{1,2}$/;

/** The segments of the text, separators taken from its ISA; line breaks between segments are skipped. */
export function splitSegments(text: string, separators: Separators): string[][] {
  const out: string[][] = [];
  for (const raw of text.split(separators.segment)) {
    // A line break after each terminator (or a CR before a newline terminator) is layout, not data.
    const piece = raw.replace(/^[\r\n]+/, '').replace(/\r$/, '');
    if (piece.trim() === '') continue;
    out.push(piece.split(separators.element));
  }
  return out;
}

/** The separators of an interchange: element at position 4, component at 105, terminator at 106. */
export function separatorsOf(text: string): Separators | string {
  if (!text.startsWith('ISA')) return 'The file does not start with an ISA segment.';
  if (text.length < ISA_LENGTH)
    return `The ISA segment is cut short: ${text.length} characters, an ISA has ${ISA_LENGTH}.`;
  const element = text.charAt(3);
  const separators = { element, component: text.charAt(104), segment: text.charAt(105) };
  const fields = text.slice(0, 105).split(element);
  if (fields.length !== 17 || text.charAt(103) !== element)
    return `The ISA segment is not ${ISA_LENGTH} characters with 16 fixed-width elements separated by "${element}" (position 4).`;
  if (/[A-Za-z0-9 ]/.test(separators.segment) || separators.segment === element)
    return `The segment terminator (ISA position 106) is "${separators.segment}": a letter, digit, space or the element separator cannot be one.`;
  return separators;
}

export function readInterchange(text: string): ReadInterchange {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const separators = separatorsOf(body);
  if (typeof separators === 'string')
    return { interchange: undefined, findings: [{ scope: 'interchange', message: separators }] };
  return new EnvelopeReader(separators).read(splitSegments(body, separators));
}

/** Walks the segments once: ISA, groups of sets, IEA; every finding kept, none thrown. */
class EnvelopeReader {
  private readonly findings: EnvelopeFinding[] = [];
  private readonly groups: FunctionalGroup[] = [];
  constructor(private readonly separators: Separators) {}

  read(segments: string[][]): ReadInterchange {
    const isa = segments[0]!;
    const at = (i: number) => (isa[i] ?? '').trim();
    const version = at(12);
    const control = isa[13] ?? '';
    if (!VERSIONS.has(version))
      this.interchange(`ISA12 is "${version}": this service reads 00401 and 00501 interchanges.`);
    if (!/^\d{9}$/.test(control))
      this.interchange(`ISA13 (the interchange control number) is "${control}", not nine digits.`);
    let i = 1;
    while (i < segments.length && segments[i]![0] === 'GS') i = this.group(segments, i);
    const iea = segments[i];
    if (iea?.[0] !== 'IEA') {
      const found = iea ? `segment ${i + 1} is ${iea[0]}` : 'the file ends';
      this.interchange(`Expected GS or IEA after the groups, but ${found}.`);
    } else {
      if (Number(iea[1]) !== this.groups.length || !/^\d+$/.test(iea[1] ?? ''))
        this.interchange(
          `IEA01 says ${iea[1] ?? 'nothing'} functional group(s); the interchange holds ${this.groups.length}.`,
        );
      if (iea[2] !== control)
        this.interchange(`IEA02 (${iea[2] ?? 'missing'}) is not ISA13 (${control}).`);
      if (i + 1 < segments.length)
        this.interchange(
          `Segment ${i + 2} (${segments[i + 1]![0]}) follows the IEA: one interchange per file.`,
        );
    }
    return {
      interchange: {
        separators: this.separators,
        sender: { qualifier: at(5), id: at(6) },
        receiver: { qualifier: at(7), id: at(8) },
        version,
        control,
        usage: at(15),
        groups: this.groups,
      },
      findings: this.findings,
    };
  }

  /** One GS … GE group from `start`; returns the index after it. */
  private group(segments: string[][], start: number): number {
    const gs = segments[start]!;
    const index = this.groups.length;
    const sets: TransactionSet[] = [];
    const group: FunctionalGroup = {
      functionalId: gs[1] ?? '',
      control: gs[6] ?? '',
      version: gs[8] ?? '',
      senderGroupId: gs[2] ?? '',
      receiverGroupId: gs[3] ?? '',
      sets,
    };
    this.groups.push(group);
    if (!GROUP_VERSIONS.test(group.version))
      this.groupFinding(
        index,
        2,
        `GS08 is "${group.version}": this service reads 004010 and 005010.`,
      );
    let i = start + 1;
    while (i < segments.length && segments[i]![0] === 'ST') i = this.set(segments, i, index, sets);
    const ge = segments[i];
    if (ge?.[0] !== 'GE') {
      const found = ge ? `segment ${i + 1} is ${ge[0]}` : 'the file ends';
      this.groupFinding(index, 3, `Group ${group.control}: expected ST or GE, but ${found}.`);
      return ge && ge[0] !== 'GS' && ge[0] !== 'IEA' ? this.skipTo(segments, i) : i;
    }
    if (Number(ge[1]) !== sets.length || !/^\d+$/.test(ge[1] ?? ''))
      this.groupFinding(
        index,
        5,
        `Group ${group.control}: GE01 says ${ge[1] ?? 'nothing'} transaction set(s); the group holds ${sets.length}.`,
      );
    if (ge[2] !== group.control)
      this.groupFinding(
        index,
        4,
        `Group ${group.control}: GE02 (${ge[2] ?? 'missing'}) is not GS06.`,
      );
    return i + 1;
  }

  /** Past a stray segment: to the next GS or IEA. */
  private skipTo(segments: string[][], from: number): number {
    let i = from;
    while (i < segments.length && segments[i]![0] !== 'GS' && segments[i]![0] !== 'IEA') i++;
    return i;
  }

  /** One ST … SE set from `start`; returns the index after it. */
  private set(segments: string[][], start: number, group: number, sets: TransactionSet[]): number {
    const st = segments[start]!;
    const control = st[2] ?? '';
    const inner: Segment[] = [];
    const index = sets.length;
    let i = start + 1;
    for (; i < segments.length; i++) {
      const id = segments[i]![0]!;
      if (id === 'SE' || id === 'ST' || id === 'GE' || id === 'GS' || id === 'IEA') break;
      inner.push({ id, elements: segments[i]!, position: inner.length + 2 });
    }
    sets.push({ id: st[1] ?? '', control, segments: inner });
    const se = segments[i];
    if (se?.[0] !== 'SE') {
      this.setFinding(
        group,
        index,
        2,
        `Transaction set ${control}: no SE before ${se ? se[0] : 'the end of the file'}.`,
      );
      return i;
    }
    const count = inner.length + 2;
    if (se[1] !== String(count) && Number(se[1]) !== count)
      this.setFinding(
        group,
        index,
        4,
        `Transaction set ${control}: SE01 says ${se[1] ?? 'nothing'} segments; the set has ${count} (ST and SE included).`,
      );
    if (se[2] !== control)
      this.setFinding(
        group,
        index,
        3,
        `Transaction set ${control}: SE02 (${se[2] ?? 'missing'}) is not ST02.`,
      );
    for (const segment of inner)
      if (!SEGMENT_ID.test(segment.id))
        this.setFinding(
          group,
          index,
          5,
          `Transaction set ${control}, segment ${segment.position}: "${segment.id.slice(0, 10)}" is not a segment id.`,
        );
    return i + 1;
  }

  private interchange(message: string) {
    this.findings.push({ scope: 'interchange', message });
  }
  private groupFinding(group: number, code: number, message: string) {
    this.findings.push({ scope: 'group', group, code, message });
  }
  private setFinding(group: number, set: number, code: number, message: string) {
    this.findings.push({ scope: 'set', group, set, code, message });
  }
}
