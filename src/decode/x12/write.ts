import type { Separators } from './envelope.js';
import type { Party } from './ledger.js';

/**
 * Writing interchanges: the service's 997s, 945s and 944s. One interchange, one functional
 * group, its transaction sets; counts and control numbers made here so they always agree.
 */
export interface Outgoing {
  readonly sender: Party & { readonly groupId?: string | undefined };
  readonly receiver: Party & { readonly groupId?: string | undefined };
  /** GS08: `004010` or `005010`. */
  readonly version: string;
  readonly usage: string;
  /** ISA13 (nine digits); GS06 is the same number without its zeros. */
  readonly control: string;
  /** GS01: `FA` (997), `SW` (945), `AR` (944). */
  readonly functionalId: string;
  readonly separators?: Separators;
  readonly at: Date;
}

export const DEFAULT_SEPARATORS: Separators = { element: '*', component: '>', segment: '~' };

/** The body of one transaction set, without ST and SE (added with its count and number). */
export interface OutgoingSet {
  readonly id: string;
  readonly segments: ReadonlyArray<readonly string[]>;
}

const fixed = (value: string, width: number) => value.slice(0, width).padEnd(width, ' ');

/** ISA11 of a 00501 interchange: a repetition separator none of the others uses. */
function repetition(separators: Separators): string {
  const used = new Set([separators.element, separators.component, separators.segment]);
  return ['^', '{', '!', '`'].find((c) => !used.has(c)) ?? '^';
}

/** The interchange's text, one segment per line after its terminator (a layout every reader skips). */
export function writeInterchange(out: Outgoing, sets: readonly OutgoingSet[]): string {
  const sep = out.separators ?? DEFAULT_SEPARATORS;
  const yymmdd = out.at.toISOString().slice(2, 10).replace(/-/g, '');
  const ccyymmdd = out.at.toISOString().slice(0, 10).replace(/-/g, '');
  const hhmm = out.at.toISOString().slice(11, 16).replace(':', '');
  const five = out.version.startsWith('005');
  const segments: string[][] = [
    [
      'ISA',
      '00',
      fixed('', 10),
      '00',
      fixed('', 10),
      out.sender.qualifier,
      fixed(out.sender.id, 15),
      out.receiver.qualifier,
      fixed(out.receiver.id, 15),
      yymmdd,
      hhmm,
      five ? repetition(sep) : 'U',
      five ? '00501' : '00401',
      out.control,
      '0',
      out.usage,
      sep.component,
    ],
    [
      'GS',
      out.functionalId,
      out.sender.groupId ?? out.sender.id,
      out.receiver.groupId ?? out.receiver.id,
      ccyymmdd,
      hhmm,
      String(Number(out.control)),
      'X',
      out.version,
    ],
  ];
  sets.forEach((set, index) => {
    const number = String(index + 1).padStart(4, '0');
    segments.push(['ST', set.id, number], ...set.segments.map((s) => [...s]));
    segments.push(['SE', String(set.segments.length + 2), number]);
  });
  segments.push(
    ['GE', String(sets.length), String(Number(out.control))],
    ['IEA', '1', out.control],
  );
  return (
    segments
      // The ISA is fixed-width and carries the component separator itself: written as it is.
      .map((s) =>
        s[0] === 'ISA'
          ? `${s.join(sep.element)}${sep.segment}`
          : `${trimEmpty(s)
              .map((e) => clean(e, sep))
              .join(sep.element)}${sep.segment}`,
      )
      .join('\n')
      .concat('\n')
  );
}

/** Trailing empty elements are left out, as X12 requires. */
function trimEmpty(segment: readonly string[]): readonly string[] {
  let end = segment.length;
  while (end > 1 && segment[end - 1] === '') end--;
  return segment.slice(0, end);
}

/** A value never carries a separator (it would break the segment): replaced by a space. */
function clean(value: string, sep: Separators): string {
  let out = value;
  for (const c of [sep.element, sep.component, sep.segment, '\n', '\r'])
    out = out.split(c).join(' ');
  return out;
}
