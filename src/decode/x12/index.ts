import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../../errors.js';
import type { KindName } from '../../records/kind.js';
import { applyDefaults } from '../../records/legacy/mapping.js';
import { getPath, type Plain } from '../../records/legacy/paths.js';
import type { Candidate } from '../candidate.js';
import type { RecordBuilder } from './build.js';
import { type Interchange, readInterchange, type TransactionSet } from './envelope.js';
import { located } from './partner-terms.js';
import { purchaseOrderFrom943 } from './purchase-orders.js';
import { salesOrderFrom940 } from './sales-orders.js';

/**
 * `format: x12`: one interchange per file, one record per transaction set, all-or-nothing like
 * every file. The envelope is checked before any record is made (a finding refuses the whole
 * interchange); each set's errors come back in the partner's terms (partner-terms.ts).
 */

/** The record kinds an X12 pipeline can carry, with the transaction set that makes each. */
export const X12_SETS: Readonly<Partial<Record<KindName, X12Set>>> = {
  'sales-orders': {
    id: '940',
    functionalId: 'OW',
    map: salesOrderFrom940,
    businessIdPath: 'identifiers.businessId',
    complete: (record) =>
      applyDefaults(record, {
        'shipAddresses[].shipmentId': getPath(record, 'identifiers.shipmentId'),
        'shipContacts[].shipmentId': getPath(record, 'identifiers.shipmentId'),
        'shipmentLines[].shipmentId': getPath(record, 'identifiers.shipmentId'),
      }),
  },
  'purchase-orders': {
    id: '943',
    functionalId: 'AR',
    map: purchaseOrderFrom943,
    businessIdPath: 'identifiers.businessId',
    complete: (record) =>
      applyDefaults(record, {
        'lines[].identifiers.purchaseOrderId': getPath(record, 'identifiers.id'),
      }),
  },
};

interface X12Set {
  /** ST01 */
  readonly id: string;
  /** GS01 of a group of these sets. */
  readonly functionalId: string;
  readonly map: (set: TransactionSet) => RecordBuilder;
  readonly businessIdPath: string;
  /** After the profile: what every item takes from the record (the order number, as for v1). */
  readonly complete?: (record: Plain) => void;
}

/** An interchange accepted before from the same sender with the same ISA13, as a receipt can name it. */
export interface EarlierInterchange {
  readonly file: string;
  readonly at: string;
}

export interface X12DecodeOptions {
  readonly kind: KindName;
  readonly businessId: string;
  /** The onboarding profile's values for the kind: fill what the set leaves out. */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** Interchanges are read whole: a file larger than this is refused. */
  readonly maxBytes: number;
  /** The interchange accepted earlier under the same sender and control number, if any. */
  readonly earlier?: (interchange: Interchange) => Promise<EarlierInterchange | undefined>;
}

export const partnerOf = (interchange: Pick<Interchange, 'sender'>) =>
  `${interchange.sender.qualifier}:${interchange.sender.id}`;

/** The candidates of an X12 file, one per transaction set, after the envelope checks. */
export async function decodeX12(
  path: string,
  options: X12DecodeOptions,
): Promise<{ mode: 'stream'; open: () => AsyncIterable<Candidate> }> {
  const { size } = await stat(path);
  if (size > options.maxBytes)
    throw new PayloadTooLarge({
      detail: `The X12 file has ${size} bytes; interchanges are read whole and limited to ${options.maxBytes} bytes. Split it into several interchanges.`,
    });
  const interchange = checkedInterchange((await readFile(path)).toString('latin1'), options.kind);
  const earlier = await options.earlier?.(interchange);
  if (earlier)
    throw new MalformedBody({
      detail: `Duplicate interchange: control number ${interchange.control} from sender ${partnerOf(interchange)} was accepted before (${earlier.file}, ${earlier.at}); this interchange was not processed. Send new data under a new ISA13.`,
    });
  const sets = interchange.groups.flatMap((group) => group.sets);
  return {
    mode: 'stream',
    async *open() {
      for (const set of sets) yield candidate(set, options);
    },
  };
}

/** Reads and checks the envelope; every finding at once in one `MalformedBody`. */
export function checkedInterchange(text: string, kind: KindName): Interchange {
  const { interchange, findings } = readInterchange(text);
  const expected = X12_SETS[kind];
  const problems = findings.map((f) => f.message);
  if (interchange && expected)
    for (const group of interchange.groups)
      for (const set of group.sets)
        if (set.id !== expected.id)
          problems.push(
            `Transaction set ${set.control}: ST01 is ${set.id}, not supported here; this pipeline reads ${expected.id} (${kind}).`,
          );
  if (interchange?.groups.every((g) => g.sets.length === 0))
    problems.push('The interchange holds no transaction set.');
  if (problems.length > 0 || !interchange) {
    const from = interchange ? ` ${interchange.control} from ${partnerOf(interchange)}` : '';
    throw new MalformedBody({
      detail: `The X12 interchange${from} is refused whole: ${problems.join(' ')}`,
    });
  }
  return interchange;
}

function candidate(set: TransactionSet, options: X12DecodeOptions): Candidate {
  const layout = X12_SETS[options.kind]!;
  const mapped = layout
    .map(set)
    .finish(layout.businessIdPath, options.businessId, options.defaults, layout.complete);
  const { sources, problems } = mapped;
  const explain = (v2Errors: readonly string[]) => {
    const out = [...problems];
    for (const error of v2Errors) {
      const split = error.indexOf(': ');
      const path = error.slice(0, split);
      const message = error.slice(split + 2);
      const place = sources.place(path);
      if (place) {
        out.push(located(place, place.element === undefined ? `${path}: ${message}` : message));
        continue;
      }
      const carrier = sources.carrier(path);
      out.push(
        carrier
          ? located(
              { set: set.control, segment: { id: carrier.segment, position: 2 } },
              `${path}: ${message} (segment ${carrier.shown} missing)`,
            )
          : located(
              { set: set.control },
              `${path}: ${message} (no ${set.id} segment maps to it: it comes from the onboarding profile, "${path.replace(/\[\d+\]/g, '[]')}" for ${options.kind} of ${options.businessId})`,
            ),
      );
    }
    return [...new Set(out)];
  };
  return {
    record: mapped.record,
    ...(problems.length > 0 && { early: problems }),
    explain,
  };
}
