import type { EnvelopeFinding, Interchange } from './envelope.js';
import { parseLocated } from './partner-terms.js';
import type { OutgoingSet } from './write.js';

/**
 * The 997 Functional Acknowledgment of one received interchange, made from its receipt: one 997
 * transaction set per functional group (AK1), one AK2…AK5 per transaction set, AK9 for the group.
 * AK3/AK4 in 004010, IK3/IK4 in 005010, pointing at the segment and element that failed — read
 * back from the receipt's errors, which are written in these very terms (partner-terms.ts).
 *
 * - `A` accepted: the interchange was accepted (or is a copy of one that was).
 * - `E` accepted with errors: accepted, but a set carried segments its layout does not have
 *   (AK3 code 2, unexpected segment): the data was taken, those segments were not read.
 * - `R` rejected: the interchange was refused, whole (all-or-nothing): every set is `R`; the sets
 *   at fault carry their AK3/AK4 and AK5 code, the group its AK9 code.
 */
export interface AckInput {
  readonly interchange: Interchange;
  readonly findings: readonly EnvelopeFinding[];
  readonly accepted: boolean;
  /** The receipt's failing records: index over every set of the interchange, in order. */
  readonly errors: ReadonlyArray<{ readonly index: number; readonly errors: readonly string[] }>;
  /** Segment ids each set's layout knows, by ST01 (for `E`). */
  readonly known?: Readonly<Record<string, ReadonlySet<string>>>;
}

/** AK304/IK304: 1 unrecognized segment id, 2 unexpected segment, 3 mandatory segment missing, 8 data element errors. */
const SEGMENT_ERRORS = { unexpected: '2', missing: '3', elements: '8' } as const;

/** AK403/IK403 from a message: 1 mandatory element missing, 4 too short, 6 invalid character, 8 invalid date, 7 invalid code value. */
function elementError(message: string): string {
  if (/^Required\b/.test(message)) return '1';
  if (/date|CCYYMMDD|timestamp|HHMM/i.test(message)) return '8';
  if (/number/i.test(message)) return '6';
  if (/too small|at least|>=\s*1 char/i.test(message)) return '4';
  return '7';
}

export function acknowledgmentSets(input: AckInput): OutgoingSet[] {
  const { interchange, findings, accepted } = input;
  const five = (version: string) => version.startsWith('005');
  const byIndex = new Map(input.errors.map((e) => [e.index, e.errors]));
  let index = 0;
  return interchange.groups.map((group, g) => {
    const ik = five(group.version) ? 'IK' : 'AK';
    const body: string[][] = [
      five(group.version)
        ? ['AK1', group.functionalId, group.control, group.version]
        : ['AK1', group.functionalId, group.control],
    ];
    let acceptedSets = 0;
    let withErrors = false;
    group.sets.forEach((set, s) => {
      body.push(['AK2', set.id, set.control]);
      // One AK3 per segment at fault, its elements' AK4s under it.
      const notes: string[][] = [];
      const segmentsAtFault = new Map<string, string[][]>();
      for (const text of byIndex.get(index) ?? []) {
        const place = parseLocated(text);
        if (!place?.segment) continue;
        const key = `${place.segment.id}:${place.segment.position}`;
        let entry = segmentsAtFault.get(key);
        if (!entry) {
          const code = place.missing ? SEGMENT_ERRORS.missing : SEGMENT_ERRORS.elements;
          entry = [[`${ik}3`, place.segment.id, String(place.segment.position), '', code]];
          segmentsAtFault.set(key, entry);
        }
        if (place.element !== undefined)
          entry.push([`${ik}4`, String(place.element), '', elementError(place.message)]);
      }
      for (const entry of segmentsAtFault.values()) notes.push(...entry);
      const known = input.known?.[set.id];
      if (accepted && known)
        for (const segment of set.segments)
          if (!known.has(segment.id))
            notes.push([
              `${ik}3`,
              segment.id,
              String(segment.position),
              '',
              SEGMENT_ERRORS.unexpected,
            ]);
      body.push(...notes);
      const setCodes = findings.flatMap((f) =>
        f.scope === 'set' && f.group === g && f.set === s ? [String(f.code)] : [],
      );
      if (!accepted) {
        const faulty = setCodes.length > 0 || notes.length > 0 || byIndex.has(index);
        body.push(
          ['AK5', 'R', ...(setCodes.length > 0 ? setCodes : faulty ? ['5'] : [])].slice(0, 7),
        );
      } else if (notes.length > 0) {
        withErrors = true;
        acceptedSets += 1;
        body.push(['AK5', 'E']);
      } else {
        acceptedSets += 1;
        body.push(['AK5', 'A']);
      }
      index += 1;
    });
    const groupCodes = findings.flatMap((f) =>
      f.scope === 'group' && f.group === g ? [String(f.code)] : [],
    );
    const status = !accepted ? 'R' : withErrors ? 'E' : 'A';
    const count = String(group.sets.length);
    body.push(['AK9', status, count, count, String(acceptedSets), ...groupCodes].slice(0, 10));
    return { id: '997', segments: body };
  });
}

/** The segment ids of the published layouts of the sets read here, for `E` (AK3 code 2). */
export const KNOWN_SEGMENTS: Readonly<Record<string, ReadonlySet<string>>> = {
  '940': new Set(
    'W05 N1 N2 N3 N4 PER G61 N9 G62 NTE W66 LM LQ LX W01 G69 QTY MAN FA1 FA2 W20 AT8 W76 FOB W09 W19 CR1 CR2 CR4 CR5 SHH'.split(
      ' ',
    ),
  ),
  '943': new Set(
    'W06 N1 N2 N3 N4 PER G61 N9 G62 NTE W27 W10 W04 G69 W20 W19 QTY MAN W03 LX'.split(' '),
  ),
};
